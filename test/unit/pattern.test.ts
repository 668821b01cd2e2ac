/**
 * The wait pattern check both sides share (src/protocol/pattern.ts): RE2 semantics, so a pattern
 * that backtracks exponentially in JavaScript runs in linear time; what RE2 cannot run is refused
 * with the construct named; flags map to RE2's; an oversized program is refused.
 * (Against a real supervisor, with the negative control: test/hardening/hostile-patterns.test.ts.)
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileLinePattern, compileLinePatternByEngine, MAX_PATTERN_CHARS, MAX_PATTERN_INSTRUCTIONS, type CompiledPattern } from '../../src/protocol/pattern.js';
import { inputProblem } from '../../src/wording/index.js';
import { BOUNDED } from '../helpers/bounded.js';

function compiled(source: string, flags = '') {
  const result = compileLinePattern({ source, flags });
  if (!result.ok) throw new Error(`expected ${source} to compile: ${JSON.stringify(result.problem)}`);
  return result.pattern;
}

function problemOf(result: CompiledPattern) {
  return result.ok ? null : result.problem;
}

describe('compileLinePattern', () => {
  it('matches as a JavaScript pattern does for everyday patterns', () => {
    const ready = compiled('ready|listening on :?\\d+');
    expect(ready.test('  VITE ready in 300 ms')).toBe(true);
    expect(ready.test('listening on :8080')).toBe(true);
    expect(ready.test('starting')).toBe(false);
    expect(compiled('^Serving HTTP').test('Serving HTTP on 0.0.0.0')).toBe(true);
    expect(compiled('^Serving HTTP').test(' Serving HTTP')).toBe(false);
    expect(compiled('(?<word>w\\w+)\\s').test('hello world ')).toBe(true);
  });

  it('runs the catastrophic (a+)+$ in linear time (JavaScript needs minutes for 32 a\'s)', () => {
    const pattern = compiled('(a+)+$');
    const started = Date.now();
    expect(pattern.test(`${'a'.repeat(32)}!`)).toBe(false);
    expect(pattern.test(`${'a'.repeat(8192)}!`)).toBe(false);
    expect(pattern.test('a'.repeat(8192))).toBe(true);
    // Generous: each test takes milliseconds; the backtracking engine would take longer than the universe.
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('refuses backreferences and lookaround, naming the construct; a class holding the same characters is fine', () => {
    expect(problemOf(compileLinePattern({ source: '(a)\\1', flags: '' }))).toEqual({ kind: 'unsupported', construct: 'backreference', text: '\\1' });
    expect(problemOf(compileLinePattern({ source: '(?<q>["\'])x\\k<q>', flags: '' }))).toEqual({ kind: 'unsupported', construct: 'backreference', text: '\\k<q>' });
    expect(problemOf(compileLinePattern({ source: 'ready(?=!)', flags: '' }))).toEqual({ kind: 'unsupported', construct: 'lookahead', text: '(?=' });
    expect(problemOf(compileLinePattern({ source: 'ready(?!!)', flags: '' }))).toEqual({ kind: 'unsupported', construct: 'lookahead', text: '(?!' });
    expect(problemOf(compileLinePattern({ source: '(?<=x)y', flags: '' }))).toEqual({ kind: 'unsupported', construct: 'lookbehind', text: '(?<=' });
    expect(problemOf(compileLinePattern({ source: '(?<!x)y', flags: '' }))).toEqual({ kind: 'unsupported', construct: 'lookbehind', text: '(?<!' });
    expect(compiled('[(?=]\\\\1').test('=\\1')).toBe(true);
    // An error elsewhere keeps the engine's reason, even with a lookahead's characters in a class.
    expect(problemOf(compileLinePattern({ source: '[(?=](', flags: '' }))).toEqual({ kind: 'syntax', reason: expect.stringContaining('missing closing )') });
  });

  it('takes the flags i, m, s (g, y, d, u change nothing); refuses the others', () => {
    expect(compiled('READY', 'gi').test('ready')).toBe(true);
    expect(compiled('READY', 'gi').flags).toBe('i');
    expect(compiled('a.b', 's').test('a\nb')).toBe(true);
    expect(compiled('a.b').test('a\nb')).toBe(false);
    expect(compiled('^b', 'm').test('a\nb')).toBe(true);
    expect(problemOf(compileLinePattern({ source: 'a', flags: 'v' }))).toEqual({ kind: 'flags', flags: 'v' });
  });

  it('refuses an empty or over-long source and a program of more than the bound', () => {
    expect(problemOf(compileLinePattern({ source: '', flags: '' }))).toMatchObject({ kind: 'shape' });
    expect(problemOf(compileLinePattern({ source: 'a'.repeat(MAX_PATTERN_CHARS + 1), flags: '' }))).toMatchObject({ kind: 'shape' });
    // The bound is on the compiled program, not the text: 1000 characters of a class are a few
    // instructions, 1000 literal characters about a thousand; `(?:a?){66}a{66}` is 200, {67} 203.
    expect(`[${'a-z'.repeat(332)}_.]`).toHaveLength(MAX_PATTERN_CHARS);
    expect(compileLinePattern({ source: `[${'a-z'.repeat(332)}_.]`, flags: '' }).ok).toBe(true);
    expect(problemOf(compileLinePattern({ source: 'a'.repeat(MAX_PATTERN_CHARS), flags: '' }))).toMatchObject({ kind: 'too-complex' });
    expect(compileLinePattern({ source: '(?:a?){66}a{66}', flags: '' }).ok).toBe(true);
    expect(problemOf(compileLinePattern({ source: '(?:a?){67}a{67}', flags: '' }))).toEqual({ kind: 'too-complex', instructions: 203, max: MAX_PATTERN_INSTRUCTIONS });
  });

  it('each problem is said in one sentence that names the engine and what to do', () => {
    const say = (source: string, flags = '') => inputProblem.pattern(problemOf(compileLinePattern({ source, flags }))!);
    expect(say('(a)\\1')).toBe(
      'until uses a backreference \\1, which RE2 cannot run: wait patterns are matched by RE2, in time linear in the line, so that no ' +
        'pattern can stall the other calls; RE2 has no backreferences and no lookaround. Match the line without it (e.g. "ready" rather than "ready(?=!)")',
    );
    expect(say('(')).toMatch(/^until is not a regular expression RE2 can compile \(missing closing \): `\(`\); wait patterns are matched by RE2/);
    expect(say('a', 'v')).toMatch(/^until has the flags "v"; RE2 runs the flags i, m and s/);
    expect(say('(?:a?){67}a{67}')).toBe('until compiles to 203 RE2 instructions, more than the 200 accepted; use a shorter pattern (a plain word of the line is enough)');
  });
});

describe('plain-text patterns: a string search with RE2’s answers', () => {
  /** A small generator (mulberry32), so a failure names a seed that reproduces it. */
  function random(seed: number): () => number {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const pick = <T,>(next: () => number, items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const SOURCE_PIECES = ['a', 'b', 'ab', 'é', ' ', '\\.', '\\|', '\\$', '\\^', '\\\\', '\\-', '\\/', '|', '^', '$', '.', '\\d', '[a]', 'a*', '\0', '😀'];
  const LINE_PIECES = ['a', 'b', 'é', ' ', '.', '|', '$', '^', '\\', '-', '/', '\n', '\0', '😀', 'ab'];

  it('matches every line as RE2 does, and refuses what RE2 refuses (5000 generated patterns, 40 lines each)', () => {
    const next = random(20261202);
    let viaSearch = 0;
    for (let n = 0; n < 5000; n++) {
      const source = Array.from({ length: 1 + Math.floor(next() * 6) }, () => pick(next, SOURCE_PIECES)).join('');
      const flags = pick(next, ['', 's', 'm', 'i', 'ms', 'g']);
      const ours = compileLinePattern({ source, flags });
      const engine = compileLinePatternByEngine({ source, flags });
      expect(ours.ok, `${JSON.stringify(source)} /${flags}`).toBe(engine.ok);
      if (!ours.ok || !engine.ok) {
        expect(problemOf(ours)).toEqual(problemOf(engine));
        continue;
      }
      if (!/[.[*\\d]/.test(source.replace(/\\[.|$^\\\-/]/g, '')) && !flags.includes('i')) viaSearch++;
      for (let l = 0; l < 40; l++) {
        const line = Array.from({ length: Math.floor(next() * 8) }, () => pick(next, LINE_PIECES)).join('');
        expect(ours.pattern.test(line), `${JSON.stringify(source)} /${flags} on ${JSON.stringify(line)}`).toBe(engine.pattern.test(line));
      }
    }
    // Most generated patterns that compile are plain text: the comparison covers the search.
    expect(viaSearch).toBeGreaterThan(1000);
  });

  it('the bound is the same: plain text longer than the program bound is refused as RE2 refuses it', () => {
    expect(compileLinePattern({ source: 'x'.repeat(198), flags: '' }).ok).toBe(true);
    expect(problemOf(compileLinePattern({ source: 'x'.repeat(199), flags: '' }))).toEqual({ kind: 'too-complex', instructions: 201, max: MAX_PATTERN_INSTRUCTIONS });
  });

  it('a plain-text pattern does not load the engine; the first other one does (a fresh Node)', () => {
    const built = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/src/protocol/pattern.js')).href;
    const code = `const { compileLinePattern } = await import(${JSON.stringify(built)});
const { createRequire } = await import('node:module'); const Module = createRequire(import.meta.url)('module');
const loaded = () => Object.keys(Module._cache).some((file) => file.includes('re2js'));
const plain = compileLinePattern({ source: '^READY 3$|listening on', flags: '' });
const before = [plain.ok && plain.pattern.test('READY 3'), loaded()];
compileLinePattern({ source: 'listening on :\\\\d+', flags: '' });
console.log(JSON.stringify([...before, loaded()]));`;
    const { NODE_OPTIONS: _flags, ...env } = process.env;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { ...BOUNDED, env, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual([true, false, true]);
  });
});
