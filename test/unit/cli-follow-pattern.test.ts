/**
 * The wait pattern while an unfinished line is shown (src/cli/follow.ts): any line but that one,
 * in RE2's syntax (no lookahead), within the pattern limits the runtime enforces.
 */
import { describe, expect, it } from 'vitest';
import { otherThan } from '../../src/cli/follow.js';
import { compileLinePattern } from '../../src/protocol/pattern.js';
import { patternProblem } from '../../src/runtime/input-checks.js';

function compiled(text: string) {
  const source = otherThan(text);
  expect(patternProblem(source)).toBeNull();
  const result = compileLinePattern({ source, flags: '' });
  if (!result.ok) throw new Error(`not compiled: ${JSON.stringify(result.problem)}`);
  return result.pattern;
}

describe('otherThan', () => {
  it('matches every line but the unfinished one: shorter, longer, different, empty', () => {
    for (const text of ['Password: ', 'a]b\\c^d-e[f$', 'é日本 ✓', 'progress [====>   ] 45%']) {
      const pattern = compiled(text);
      expect(pattern.test(text)).toBe(false);
      expect(pattern.test(`${text}x`)).toBe(true);
      expect(pattern.test(text.slice(0, -1))).toBe(true);
      expect(pattern.test(`Z${text.slice(1)}`)).toBe(true);
      expect(pattern.test('')).toBe(true);
    }
  });

  it('a long line is told apart by its first characters (the wait is bounded for the rest)', () => {
    const text = `${'x'.repeat(300)}`;
    const pattern = compiled(text);
    expect(pattern.test(text)).toBe(false);
    expect(pattern.test(`y${text}`)).toBe(true);
    expect(pattern.test(`${text}more`)).toBe(false); // past the compared characters: the bounded wait sees it
  });
});
