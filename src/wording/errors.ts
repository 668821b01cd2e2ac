/**
 * Errors as a tool answers them: what happened, and what the model can do about it.
 */
import { describeValue } from '../protocol/describe.js';
import type { PatternProblem } from '../protocol/pattern.js';
import { didNot, messageOf, sentence } from './common.js';
import { MACHINE_LIMITS, machineLimitAdvice } from './reports.js';

/** An error's code and message, as `errorText` needs them (a HephError, or one rebuilt from the wire). */
export interface CodedError {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/**
 * Any error from the runtime or the lock table, as the answer of `tool`. `coded` is the error when
 * it carries a stable code; a TypeError or RangeError without one is the caller's bad input.
 */
export function errorText(tool: string, error: unknown, coded: CodedError | null): string {
  const nothing = `Nothing was ${didNot(tool)}.`;
  if (coded !== null) {
    const message = sentence(coded.message);
    switch (coded.code) {
      case 'ERR_INVALID_INPUT':
        return `${tool}: bad input: ${message} ${nothing}`;
      case 'ERR_JOB_NOT_FOUND':
        return jobNotFound(tool, coded.details.id, coded.details.known);
      case 'ERR_JOB_LIMIT':
        return `${tool} is refused: ${message} Stop one with job_kill, or wait for one to end, then try again. ${nothing}`;
      case 'ERR_SPAWN':
        if (typeof coded.details.code === 'string' && coded.details.code in MACHINE_LIMITS) {
          return `${tool}: the job could not start: ${message} ${machineLimitAdvice(coded.details.code)}`;
        }
        return `${tool}: the job could not start: ${message} Fix the command or its working directory, then try again.`;
      case 'ERR_BAD_RESOURCE':
        return `${tool}: bad lock: ${message} ${nothing}`;
      case 'ERR_BAD_LOCK_RULE':
        return (
          `${tool} cannot run: the host's lock rules are misconfigured: ${message} ${nothing} ` +
          'This is a problem in the host configuration that the call cannot fix; tell the user.'
        );
      case 'ERR_LOCK_TIMEOUT':
        return `${tool}: gave up waiting for its locks: ${message} ${nothing} Try again once the holder has ended.`;
      case 'ERR_LOCK_CANCELLED':
        return `${tool}: the wait for its locks was cancelled: ${message} ${nothing}`;
      case 'ERR_LOCK_BUSY':
        return `${tool}: its locks are held by others: ${message} ${nothing}`;
      case 'ERR_LOCK_VAULT_FULL':
        return `${tool}: its locks are refused: ${message} ${nothing}`;
      case 'ERR_SUPERVISOR_LOST':
        return (
          `${tool}: the job supervisor died during this call (${coded.message}). Its running jobs are marked lost ` +
          'and were stopped; the next call starts a fresh supervisor, so try again.'
        );
      case 'ERR_RUNTIME_CLOSED':
        return `${tool}: the session's job runtime is closed: no job can be started, read or stopped any more. ${nothing}`;
      default:
        return `${tool} failed: ${message} (${coded.code}) ${nothing}`;
    }
  }
  if (error instanceof TypeError || error instanceof RangeError) return `${tool}: bad input: ${sentence(messageOf(error))} ${nothing}`;
  return `${tool} failed unexpectedly: ${sentence(messageOf(error))} This is a fault in heph-jobs or its host, not in the call.`;
}

/** A tool aimed at a job that does not exist: which jobs do, and why `id` may be gone. */
export function jobNotFound(tool: string, id: unknown, known: unknown): string {
  const ids = Array.isArray(known) ? known.filter((value): value is number => typeof value === 'number') : [];
  const which =
    ids.length === 0
      ? 'No job exists yet (background starts one).'
      : `The jobs are ${ids.join(', ')}${typeof id === 'number' && id < Math.max(...ids) ? `; job ${id} may have finished long ago and been forgotten (only the newest finished jobs are kept)` : ''}.`;
  return `${tool}: there is no job ${String(id)}. ${which} job_status {} lists every job.`;
}


/** What RE2, the engine that runs wait (and filter) patterns, leaves out of JavaScript's syntax. */
function re2Note(field: string): string {
  return (
    `${field === 'until' ? 'wait patterns' : 'patterns'} are matched by RE2, in time linear in the line, so that no pattern can stall ` +
    'the other calls; RE2 has no backreferences and no lookaround'
  );
}

/** What is wrong with the pattern a caller gave as `field` (`until`, `filter`). */
function patternProblemText(problem: PatternProblem, field: string): string {
  switch (problem.kind) {
    case 'shape':
      return `${field} must be a regular expression of 1 to ${problem.maxChars} characters; received ${describeValue(problem.value)}`;
    case 'unsupported':
      return `${field} uses a ${problem.construct} ${problem.text}, which RE2 cannot run: ${re2Note(field)}. Match the line without it (e.g. "ready" rather than "ready(?=!)")`;
    case 'flags':
      return `${field} has the flags ${JSON.stringify(problem.flags)}; RE2 runs the flags i, m and s (g, y, d and u change nothing for a ${field === 'until' ? 'wait' : 'pattern'}), not the others`;
    case 'syntax':
      return `${field} is not a regular expression RE2 can compile (${problem.reason}); ${re2Note(field)}`;
    case 'too-complex':
      return `${field} compiles to ${problem.instructions} RE2 instructions, more than the ${problem.max} accepted; use a shorter pattern (a plain word of the line is enough)`;
  }
}

/** What is wrong with a notify watch a caller asked for. */
export const notifyProblem = {
  notAnObject: (field: string, value: unknown) =>
    `${field} must be an object with a pattern, a port or both, e.g. {"pattern": "FAIL"} or {"port": 3000}; received ${describeValue(value)}`,
  empty: (field: string) => `${field} has neither a pattern nor a port; give one or both, e.g. {"pattern": "FAIL"}`,
  badPort: (field: string, value: unknown) => `${field}.port must be a TCP port, a whole number from 1 to 65535; received ${describeValue(value)}`,
  badToolPort: (text: string) => `notify ${JSON.stringify(text)} names no TCP port; "port:N" takes N from 1 to 65535`,
  noNotify: () => 'notify is not offered by this runtime (it has no notify call)',
  tooManyAsked: (field: string, asked: number, max: number) => `${field} asks for ${asked} watches; a job may have at most ${max}`,
  tooMany: (id: number, has: number, max: number) => `job ${id} has ${has} notify watches; a job may have at most ${max}`,
  ended: (id: number, state: string) => `job ${id} is not running (${state}); there is nothing left to watch`,
};

/**
 * What is wrong with a command, a wait pattern or an environment a caller handed the runtime. The
 * same sentences reach a model (through the tools) and a host (as InvalidInputError).
 */
export const inputProblem = {
  commandNotAString: (value: unknown) => `command must be a string (a shell command line); received ${describeValue(value)}`,
  commandBlank: () => 'command has no text; give the shell command line to run, e.g. {"command": "npm run dev"}',
  commandHasNul: () => 'command contains a NUL character, which no shell command line can contain',
  commandTooLong: (bytes: number, max: number) =>
    `command is ${bytes} bytes long; at most ${max} bytes are accepted. Put a long script in a file and run that file`,
  pattern: (problem: PatternProblem, field = 'until') => patternProblemText(problem, field),
  envNotAnObject: (value: unknown) => `env must be an object of strings; received ${describeValue(value)}`,
  envValueNotAString: (key: string, value: unknown) => `env.${key} must be a string; received ${describeValue(value)}`,
  envEntryInvalid: (key: string) =>
    `env entry ${JSON.stringify(key)} is invalid: names must be non-empty without "=" or NUL, values without NUL`,
  badJobId: (value: unknown) => `a job id is a whole number from 0 up; received ${describeValue(value)}`,
  textNotAString: (value: unknown) => `text must be a string; received ${describeValue(value)}`,
  badSignal: (value: unknown, accepted: readonly string[]) => `signal must be one of ${accepted.join(', ')}; received ${describeValue(value)}`,
  noStdinPipe: (id: number) => `job ${id} was started without a stdin pipe, so its stdin is /dev/null; start it with stdin: true (or tty: true) to write to it`,
  stdinNotRead: (id: number, state: string) => `job ${id} is not running (${state}); nothing reads its stdin any more`,
};
