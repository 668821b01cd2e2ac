/**
 * The shape every figure returns, built here so that ratios and goals are computed one way.
 *
 * A figure has groups; a group has one row that is ours and the alternatives measured beside it
 * in the same run. `compare` says how the ratio reads: `time` (or `size`) is ours ÷ theirs of the
 * median (below 1 is faster, or smaller), `rate` is our rate ÷ theirs (above 1 is faster; rates come from the median
 * duration and the work one sample does).
 */
import { summarize } from './stats.mjs';

/**
 * A row: `samples` in `unit`; `work` ({amount, unit}) turns a duration into a rate;
 * `survivors` (one count per run) for kill figures; `note` is printed beside it.
 */
export function row(name, samples, options = {}) {
  const stats = summarize(samples);
  const out = { name, ours: options.ours === true, unit: options.unit ?? 'ms', ...stats };
  // Kept for the JSON (the table shows only the summary).
  out.samples = samples.map((value) => Math.round(value * 1000) / 1000);
  if (options.work && stats.n > 0) {
    out.rate = options.work.amount / (stats.median / 1000);
    out.rateUnit = `${options.work.unit}/s`;
  }
  if (options.survivors) {
    out.survivors = { max: Math.max(0, ...options.survivors), runs: options.survivors.length, total: options.survivors.reduce((a, b) => a + b, 0) };
  }
  if (options.note) out.note = options.note;
  if (options.skipped) out.skipped = options.skipped;
  return out;
}

/** A row that could not be measured here, with the reason. */
export function skippedRow(name, reason) {
  return { name, ours: false, unit: 'ms', n: 0, min: NaN, median: NaN, p95: NaN, max: NaN, skipped: reason };
}

export function group(name, rows, compare = 'time') {
  const ours = rows.find((entry) => entry.ours);
  for (const entry of rows) {
    if (entry === ours || !ours || entry.n === 0 || ours.n === 0) continue;
    entry.ratio = compare === 'rate' ? entry.median / ours.median : ours.median / entry.median;
    entry.ratioKind = compare;
  }
  return { name, compare, rows };
}

/** The ratio of ours against the named row in a group (NaN when either is missing). */
export function ratioOf(groupValue, name) {
  return groupValue.rows.find((entry) => entry.name === name)?.ratio ?? NaN;
}

/**
 * A goal: `actual` compared with `limit` by `op` ('<=' or '>='). An actual that is NaN was not
 * measured: the goal is reported as unmeasured, never as met.
 */
export function goal(text, actual, op, limit, format = ratioText) {
  if (!Number.isFinite(actual)) return { text, met: null, actual: null, shown: 'not measured' };
  const met = op === '<=' ? actual <= limit : actual >= limit;
  // A miss must not read like the limit itself: show more digits when two would round onto it.
  const shown = !met && format === ratioText && actual.toFixed(2) === limit.toFixed(2) ? `${actual.toFixed(3)}×` : format(actual);
  return { text, met, actual, shown };
}

function ratioText(value) {
  return `${value.toFixed(2)}×`;
}
