/**
 * A wait's `until` pattern, checked and compiled once for both sides: the runtime checks it where
 * it enters (src/runtime/input-checks.ts), the supervisor compiles it where the output arrives
 * (supervisor/requests/read-wait.ts). A pattern comes from a model, so it is matched by a
 * linear-time engine (re2js, RE2's semantics): JavaScript's own engine backtracks, and `(a+)+$`
 * against 32 a's and a "!" runs for minutes, freezing the process that serves every other call.
 *
 * RE2 cannot run backreferences or lookaround; such a pattern is refused with the construct named.
 * Its matching time is linear in the line but grows with the compiled program, so the program's
 * size is bounded too (MAX_PATTERN_INSTRUCTIONS). The problems are data; the sentences are the
 * caller's (src/wording/ for a model or a person).
 */
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';

/** Longest `until` pattern, in characters (the tools' schema says the same). */
export const MAX_PATTERN_CHARS = 1000;
/**
 * Largest compiled program accepted, in RE2 instructions (about one per literal character).
 * Everyday patterns take 10-150 ("ready|listening on" 20, an eight-way alternation of dev-server
 * and build messages 140). RE2's time is linear in the line but proportional to the program where
 * its DFA gives up (a pattern built for that, such as `a.{196}$`), so the bound caps what one line
 * can cost a wait, which yields between lines (supervisor/requests/read-wait.ts), and so how long it
 * can hold up another request.
 */
export const MAX_PATTERN_INSTRUCTIONS = 200;

/** A pattern as the channel carries it. `flags` are JavaScript's letters (a RegExp's `flags`). */
export interface PatternSpec {
  source: string;
  flags: string;
}

/** A compiled pattern: `test` is true when the pattern matches anywhere in `line`. */
export interface LinePattern extends PatternSpec {
  test(line: string): boolean;
}

/** A construct of JavaScript's regular expressions that RE2 does not have. */
export type UnsupportedConstruct = 'backreference' | 'lookahead' | 'lookbehind';

export type PatternProblem =
  /** Not a string, empty, or longer than MAX_PATTERN_CHARS. */
  | { kind: 'shape'; value: unknown; maxChars: number }
  /** `text` is the construct as written, e.g. `\1`, `(?=`. */
  | { kind: 'unsupported'; construct: UnsupportedConstruct; text: string }
  /** Flags RE2 has no equivalent of (e.g. `v`). */
  | { kind: 'flags'; flags: string }
  /** The engine's reason, e.g. "missing closing ): `(`". */
  | { kind: 'syntax'; reason: string }
  | { kind: 'too-complex'; instructions: number; max: number };

export type CompiledPattern = { ok: true; pattern: LinePattern } | { ok: false; problem: PatternProblem };

/** JavaScript flag letters that RE2 has (CASE_INSENSITIVE, MULTILINE, DOTALL). */
const KEPT_FLAGS = ['i', 'm', 's'] as const;
type KeptFlag = (typeof KEPT_FLAGS)[number];
/** `g`, `y`, `d`: state and indices, meaningless for a wait that tests each line afresh; `u`: RE2 is always Unicode-aware. */
const DROPPED_FLAGS = new Set(['g', 'y', 'd', 'u']);

let engine: typeof RE2JS | null = null;

/**
 * The engine, loaded on the first pattern: it takes ~20 ms to load, which a supervisor (whose
 * start is on the path of the first job) or a host that never waits on a pattern should not pay.
 */
function re2(): typeof RE2JS {
  engine ??= (createRequire(import.meta.url)('re2js') as typeof import('re2js')).RE2JS;
  return engine;
}

/**
 * Compiles `spec`, or says what is wrong with it. A pattern that is plain text (or alternatives of
 * plain text, each maybe anchored: `ready`, `^Serving HTTP`, `compiled|error`) is matched by a
 * string search, which gives RE2's answer in linear time without loading the engine (~20 ms on the
 * first wait of each process) or running it per line.
 */
export function compileLinePattern(spec: PatternSpec): CompiledPattern {
  const checked = checkedSpec(spec);
  if (!checked.ok) return checked;
  const literal = literalMatcher(checked.source, checked.kept);
  if (literal) return { ok: true, pattern: { source: checked.source, flags: checked.kept.join(''), test: literal } };
  return compiledByEngine(checked.source, checked.kept);
}

/** compileLinePattern without the string search: RE2 compiles every pattern (tests compare the two). */
export function compileLinePatternByEngine(spec: PatternSpec): CompiledPattern {
  const checked = checkedSpec(spec);
  return checked.ok ? compiledByEngine(checked.source, checked.kept) : checked;
}

/** The source and the flags RE2 has, or what is wrong with their shape. */
function checkedSpec(spec: PatternSpec): { ok: true; source: string; kept: KeptFlag[] } | { ok: false; problem: PatternProblem } {
  const { source, flags } = spec;
  if (typeof source !== 'string' || source.length === 0 || source.length > MAX_PATTERN_CHARS) {
    return { ok: false, problem: { kind: 'shape', value: source, maxChars: MAX_PATTERN_CHARS } };
  }
  const letters = [...(typeof flags === 'string' ? flags : '')].filter((flag) => !DROPPED_FLAGS.has(flag));
  if (!letters.every((flag) => (KEPT_FLAGS as readonly string[]).includes(flag))) return { ok: false, problem: { kind: 'flags', flags } };
  return { ok: true, source, kept: KEPT_FLAGS.filter((flag) => letters.includes(flag)) };
}

function compiledByEngine(source: string, kept: readonly KeptFlag[]): CompiledPattern {
  const RE2 = re2();
  const bit = { i: RE2.CASE_INSENSITIVE, m: RE2.MULTILINE, s: RE2.DOTALL };
  let compiled: RE2JS;
  try {
    compiled = RE2.compile(source, kept.reduce((bits, flag) => bits | bit[flag], 0));
  } catch (error) {
    const unsupported = unsupportedConstruct(source);
    if (unsupported) return { ok: false, problem: { kind: 'unsupported', ...unsupported } };
    return { ok: false, problem: { kind: 'syntax', reason: engineReason(error) } };
  }
  const instructions = compiled.re2().numberOfInstructions() as number;
  if (instructions > MAX_PATTERN_INSTRUCTIONS) return { ok: false, problem: { kind: 'too-complex', instructions, max: MAX_PATTERN_INSTRUCTIONS } };
  return { ok: true, pattern: { source, flags: kept.join(''), test: (line) => compiled.test(line) } };
}

/** One alternative of a plain-text pattern: its text, and whether it must start or end the line. */
interface LiteralBranch {
  text: string;
  atStart: boolean;
  atEnd: boolean;
}

/** Characters with a meaning in a pattern; escaped (`\.`), each stands for itself. */
const META = new Set([...'\\^$.|?*+()[]{}']);
/** What may follow a backslash and still be plain text: the metacharacters, `/` and `-`. */
const ESCAPABLE = new Set([...META, '/', '-']);

/**
 * The alternatives of `source` when it is plain text, else null: no character class, group,
 * repetition, escape of a class (`\d`) or code (`\n`), and `^` and `$` only at an alternative's
 * ends. Surrogates are left to the engine (it matches code points, a string search code units).
 */
function literalBranches(source: string): LiteralBranch[] | null {
  const branches: LiteralBranch[] = [];
  let branch: LiteralBranch = { text: '', atStart: false, atEnd: false };
  for (let i = 0; i < source.length; i++) {
    const char = source[i]!;
    if (branch.atEnd && char !== '|') return null;
    if (char === '\\') {
      const next = source[i + 1];
      if (next === undefined || !ESCAPABLE.has(next)) return null;
      branch.text += next;
      i++;
    } else if (char === '|') {
      if (branch.text === '') return null;
      branches.push(branch);
      branch = { text: '', atStart: false, atEnd: false };
    } else if (char === '^') {
      if (branch.text !== '' || branch.atStart) return null;
      branch.atStart = true;
    } else if (char === '$') {
      branch.atEnd = true;
    } else if (META.has(char) || (char >= '\ud800' && char <= '\udfff')) {
      return null;
    } else {
      branch.text += char;
    }
  }
  if (branch.text === '') return null;
  branches.push(branch);
  return branches;
}

/**
 * RE2's program size for these alternatives, or more: one instruction per character, one per
 * anchor, one per `|`, and two of its own (RE2 may share common prefixes and need fewer). Over
 * the bound, the engine decides (and refuses it as too complex when it is).
 */
function programBound(branches: readonly LiteralBranch[]): number {
  let size = 2 + branches.length - 1;
  for (const { text, atStart, atEnd } of branches) size += text.length + Number(atStart) + Number(atEnd);
  return size;
}

/**
 * The string search for `source`, or null when it is no plain text or the flags change what plain
 * text means: `i` (RE2's case folding is not toLowerCase's), and `m` where an anchor is (a line
 * given with a newline in it would start and end there too). `s` changes nothing without `.`.
 */
function literalMatcher(source: string, kept: readonly KeptFlag[]): ((line: string) => boolean) | null {
  if (kept.includes('i')) return null;
  const branches = literalBranches(source);
  if (branches === null || programBound(branches) > MAX_PATTERN_INSTRUCTIONS) return null;
  if (kept.includes('m') && branches.some((branch) => branch.atStart || branch.atEnd)) return null;
  const tests = branches.map(({ text, atStart, atEnd }): ((line: string) => boolean) => {
    if (atStart && atEnd) return (line) => line === text;
    if (atStart) return (line) => line.startsWith(text);
    if (atEnd) return (line) => line.endsWith(text);
    return (line) => line.includes(text);
  });
  if (tests.length === 1) return tests[0]!;
  return (line) => tests.some((test) => test(line));
}

/** The spec of a RegExp a library caller passed: its source and flags. */
export function patternSpecOf(pattern: RegExp | string): PatternSpec {
  return typeof pattern === 'string' ? { source: pattern, flags: '' } : { source: pattern.source, flags: pattern.flags };
}

/**
 * The first backreference or lookaround in `source` outside a character class: what made RE2
 * refuse a pattern JavaScript would take. Only asked after RE2 refused, so a miss here falls back
 * to the engine's own reason.
 */
function unsupportedConstruct(source: string): { construct: UnsupportedConstruct; text: string } | null {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === '\\') {
      const next = source[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return { construct: 'backreference', text: `\\${/^\d+/.exec(source.slice(i + 1))![0]}` };
      if (!inClass && next === 'k' && source[i + 2] === '<') return { construct: 'backreference', text: source.slice(i, source.indexOf('>', i) + 1 || undefined) };
      i++;
      continue;
    }
    if (inClass) {
      if (char === ']') inClass = false;
      continue;
    }
    if (char === '[') {
      inClass = true;
      continue;
    }
    if (char === '(' && source[i + 1] === '?') {
      const opening = source.slice(i, i + 4);
      if (opening.startsWith('(?=') || opening.startsWith('(?!')) return { construct: 'lookahead', text: opening.slice(0, 3) };
      if (opening === '(?<=' || opening === '(?<!') return { construct: 'lookbehind', text: opening };
    }
  }
  return null;
}

/** The engine's message without its "error parsing regexp: " prefix. */
function engineReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/^error parsing regexp:\s*/, '');
}
