/**
 * "Did you mean ...": the closest of the known words to a mistyped one, by edit distance (the
 * optimal string alignment distance: an insertion, a deletion, a substitution or a swap of two
 * neighbouring letters each cost one, so `stauts` is one edit from `status`).
 */

/** Edits between `a` and `b` (insert, delete, substitute, swap two neighbours), case-sensitive. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[rows - 1]![cols - 1]!;
}

/**
 * The known word `typed` most likely meant, or null when none is close: at most one edit for a
 * word of up to five letters, two for longer ones, ties to the first.
 * Case is ignored (`Status` means `status`).
 */
export function closest(typed: string, known: Iterable<string>): string | null {
  const word = typed.toLowerCase();
  const allowed = word.length <= 5 ? 1 : 2;
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of known) {
    if (candidate === typed) continue;
    const distance = editDistance(word, candidate.toLowerCase());
    if (distance <= allowed && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
