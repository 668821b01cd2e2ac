/**
 * The checks of what a caller hands the runtime to run that a type alone cannot make: a command
 * with no text or a NUL byte, a wait pattern the supervisor's engine cannot run (the check itself
 * is src/protocol/pattern.ts, shared with the supervisor), an environment a process cannot have.
 * They live here once: the runtime's public methods throw InvalidInputError with the problem, and
 * the tools ask `commandProblem` / `patternProblem` before they ask the user about a call that
 * could not run. The sentences are in src/wording/.
 */
import { InvalidInputError } from '../protocol/errors.js';
import { compileLinePattern, patternSpecOf, type PatternSpec } from '../protocol/pattern.js';
import { MAX_COMMAND_BYTES } from './options.js';
import { inputProblem } from '../wording/index.js';

/** A checked value, or the sentence fragment saying what is wrong with it. */
export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

/** The value, or the problem thrown as InvalidInputError. */
function orThrow<T>(checked: Checked<T>): T {
  if (!checked.ok) throw new InvalidInputError(checked.problem);
  return checked.value;
}

function problemOf<T>(checked: Checked<T>): string | null {
  return checked.ok ? null : checked.problem;
}

function checkCommand(command: unknown): Checked<string> {
  if (typeof command !== 'string') return { ok: false, problem: inputProblem.commandNotAString(command) };
  if (command.trim().length === 0) return { ok: false, problem: inputProblem.commandBlank() };
  if (command.includes('\0')) return { ok: false, problem: inputProblem.commandHasNul() };
  const bytes = Buffer.byteLength(command);
  if (bytes > MAX_COMMAND_BYTES) return { ok: false, problem: inputProblem.commandTooLong(bytes, MAX_COMMAND_BYTES) };
  return { ok: true, value: command };
}

/**
 * A wait pattern: a string (its source) or a RegExp, checked by the linear-time engine that will
 * run it in the supervisor (src/protocol/pattern.ts). What flows on is its source and flags.
 */
function checkPattern(pattern: unknown, field: string): Checked<PatternSpec> {
  const spec = pattern instanceof RegExp ? patternSpecOf(pattern) : { source: pattern as string, flags: '' };
  const compiled = compileLinePattern(spec);
  if (!compiled.ok) return { ok: false, problem: inputProblem.pattern(compiled.problem, field) };
  return { ok: true, value: { source: compiled.pattern.source, flags: compiled.pattern.flags } };
}

/** Why the runtime would refuse `command`, or null. */
export function commandProblem(command: unknown): string | null {
  return problemOf(checkCommand(command));
}

/** Why the runtime would refuse `pattern` as `until` (or as `field`: `filter`), or null. */
export function patternProblem(pattern: unknown, field = 'until'): string | null {
  return problemOf(checkPattern(pattern, field));
}

export function validateCommand(command: unknown): string {
  return orThrow(checkCommand(command));
}

/** The pattern's source and flags once the supervisor's engine is known to run it; else InvalidInputError. */
export function checkedPattern(pattern: RegExp | string, field = 'until'): PatternSpec {
  return orThrow(checkPattern(pattern, field));
}

/** The runtime's own variable: set per job by the supervisor, never passed on. */
const JOB_MARKER_NAME = 'HEPH_JOB';

/** Throws InvalidInputError unless `env` is an object (before any of it is read). */
export function checkEnvObject(env: NodeJS.ProcessEnv): void {
  if (typeof env !== 'object' || env === null) throw new InvalidInputError(inputProblem.envNotAnObject(env));
}

/** `NAME=value` for one variable of `env` (null for HEPH_JOB, which the supervisor sets per job);
 * InvalidInputError for one a process cannot have. */
export function envEntry(key: string, value: unknown): string | null {
  if (typeof value !== 'string') throw new InvalidInputError(inputProblem.envValueNotAString(key, value));
  if (key.length === 0 || key.includes('=') || key.includes('\0') || value.includes('\0')) {
    throw new InvalidInputError(inputProblem.envEntryInvalid(key));
  }
  return key === JOB_MARKER_NAME ? null : `${key}=${value}`;
}

/** `NAME=value` entries for the supervisor; HEPH_JOB is left out (the supervisor sets it per job). */
export function envEntries(env: NodeJS.ProcessEnv): string[] {
  checkEnvObject(env);
  const entries: string[] = [];
  // Keys, then one read per key: process.env answers Object.entries at about twice the cost
  // (tens of microseconds on every background call that inherits it).
  for (const key of Object.keys(env)) {
    const value = env[key];
    if (value === undefined) continue;
    const entry = envEntry(key, value);
    if (entry !== null) entries.push(entry);
  }
  return entries;
}
