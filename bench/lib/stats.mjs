/**
 * Statistics over samples: min / median / p95 (nearest rank), and the ratio of two medians.
 * Samples are always durations or sizes as measured; rates are derived from medians.
 */

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function summarize(samples) {
  const sorted = samples.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  return {
    n: sorted.length,
    min: sorted[0] ?? NaN,
    median: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

/** Monotonic milliseconds. */
export const now = () => performance.now();

/** Times an async function: milliseconds from call to settle. */
export async function time(fn) {
  const start = now();
  await fn();
  return now() - start;
}
