/** "Did you mean": the edit distance and the closest known word, as the shell suggests commands and flags. */
import { describe, expect, it } from 'vitest';
import { closest, editDistance } from '../../src/cli/suggest.js';

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and swaps of neighbours as one edit each', () => {
    expect(editDistance('status', 'status')).toBe(0);
    expect(editDistance('stauts', 'status')).toBe(1); // a swap
    expect(editDistance('kil', 'kill')).toBe(1);
    expect(editDistance('kills', 'kill')).toBe(1);
    expect(editDistance('kell', 'kill')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('watch', 'logs')).toBe(5);
  });
});

describe('closest', () => {
  const words = ['background', 'job_status', 'status', 'kill', 'input', 'restart', 'help', 'logs', 'watch', 'quit'];

  it('names the word meant by a typo', () => {
    expect(closest('stauts', words)).toBe('status');
    expect(closest('kil', words)).toBe('kill');
    expect(closest('backgruond', words)).toBe('background');
    expect(closest('Status', words)).toBe('status');
    expect(closest('--line', ['--lines', '--since'])).toBe('--lines');
  });

  it('names nothing when no word is close (up to five letters allow one edit, longer words two)', () => {
    expect(closest('bogus', words)).toBeNull();
    expect(closest('ki', words)).toBeNull();
    expect(closest('stat', words)).toBeNull(); // two edits from status: too many for four letters
    expect(closest('statuses', words)).toBe('status'); // two edits, eight letters
    expect(closest('status', words)).toBeNull(); // the word itself is not a suggestion
  });
});
