/**
 * Runs the cases of one figure interleaved: warm-up rounds first (discarded), then `runs`
 * rounds, each calling every case once, in an order that rotates from round to round so that no
 * case always runs right after the same neighbour. Drift on a noisy machine then hits all alike.
 */
export async function interleave({ runs, warmup = 0, cases, progress = () => {} }) {
  const results = new Map(cases.map((entry) => [entry.name, []]));
  for (let round = 0; round < warmup; round++) for (const entry of cases) await entry.fn();
  for (let round = 0; round < runs; round++) {
    for (let k = 0; k < cases.length; k++) {
      const entry = cases[(round + k) % cases.length];
      results.get(entry.name).push(await entry.fn());
    }
    progress(round + 1, runs);
  }
  return results;
}
