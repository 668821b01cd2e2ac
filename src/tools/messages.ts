/**
 * Every sentence a tool answers with when it does not run: bad input, a refusal, a denial, an
 * error from the runtime. Tool errors are answers: each says what was wrong, what is accepted and
 * what to do next, in words a model can act on. The wording lives here and nowhere else.
 */
import { HephError } from '../protocol/errors.js';
import { formatResource, type ResourceConflict } from '../locks/index.js';
import { describeAccepted, type JsonSchema } from './validate.js';

/** `background(npm run dev)`: the exact string an approval "always" remembers. */
export function permissionPattern(tool: string, subject: string): string {
  return `${tool}(${subject})`;
}

export function badInput(tool: string, problem: string, schema: JsonSchema): string {
  const example = schema.examples?.[1] ?? schema.examples?.[0];
  const shown = example === undefined ? '' : ` For example: ${tool} ${inlineJson(example)}.`;
  return `${tool}: bad input: ${problem}. Accepted input: ${describeAccepted(schema)}.${shown} Nothing was run.`;
}

export function blankCommand(): string {
  return 'background: bad input: command has no text; give the shell command line to run, e.g. {"command": "npm run dev"}. Nothing was run.';
}

export function nulInCommand(): string {
  return 'background: bad input: command contains a NUL character, which no shell command line can contain. Nothing was run.';
}

export function commandTooLong(bytes: number, max: number): string {
  return `background: bad input: command is ${bytes} bytes long; at most ${max} bytes are accepted. Put a long script in a file and run that file. Nothing was run.`;
}

export function linesWithoutId(): string {
  return 'job_status: bad input: "lines" needs an "id" (it says how many lines of that job to show). Use {"id": 0, "lines": 200} for one job, or {} to list every job.';
}

/** `/job-kill` followed by something that is not a job number. */
export function notAJobNumber(raw: unknown): string {
  return `/job-kill: ${JSON.stringify(raw) ?? String(raw)} is not a job number; use /job-kill followed by the number job_status shows, e.g. /job-kill 0.`;
}

/** Nothing to approve with: level-2 tools are refused. */
export function noApprover(tool: string, pattern: string): string {
  return (
    `${tool} is refused: ${pattern} needs the user's approval, and this host has no approver configured, ` +
    `so nothing was ${didNot(tool)}. (Host: pass an approve function, createTools(runtime, { approve }), to ask the user.)`
  );
}

export function denied(tool: string, pattern: string): string {
  return `The user denied ${pattern}; nothing was ${didNot(tool)}. Do not repeat this call; ask the user what to do instead.`;
}

export function approverFailed(tool: string, pattern: string, error: unknown): string {
  return `${tool} is refused: asking the user to approve ${pattern} failed (${messageOf(error)}), so nothing was ${didNot(tool)}.`;
}

export function badApproverAnswer(tool: string, pattern: string, answer: unknown): string {
  return (
    `${tool} is refused: the approver answered ${JSON.stringify(answer) ?? String(answer)} for ${pattern}, which is not ` +
    `"once", "always" or "deny"; it counts as a denial, so nothing was ${didNot(tool)}.`
  );
}

/** job_status / job_kill whose own rules overlap what the target holds: fail at once. */
export function selfDeadlock(tool: string, job: { id: number; command: string }, conflicts: readonly ResourceConflict[]): string {
  const names = [...new Set(conflicts.map((conflict) => formatResource(conflict.b)))];
  const own = [...new Set(conflicts.map((conflict) => formatResource(conflict.a)))];
  const target = `job ${job.id} (${job.command})`;
  return (
    `${tool} cannot run: its lock rules need ${own.join(', ')}, and ${target} holds ${names.join(', ')} until it ` +
    `has ended, so this call would wait on its own target. Nothing was ${didNot(tool)}. ` +
    `Ask the user to run /job-kill ${job.id}, which stops the job without waiting for any lock.`
  );
}

/** Any error from the runtime or the lock table, as the answer of `tool`. */
export function errorText(tool: string, error: unknown): string {
  const nothing = `Nothing was ${didNot(tool)}.`;
  if (error instanceof HephError) {
    const message = sentence(error.message);
    switch (error.code) {
      case 'ERR_INVALID_INPUT':
        return `${tool}: bad input: ${message} ${nothing}`;
      case 'ERR_JOB_NOT_FOUND':
        return jobNotFound(tool, error.details.id, error.details.known);
      case 'ERR_JOB_LIMIT':
        return `${tool} is refused: ${message} Stop one with job_kill, or wait for one to end, then try again. ${nothing}`;
      case 'ERR_SPAWN':
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
      case 'ERR_SUPERVISOR_LOST':
        return (
          `${tool}: the job supervisor died during this call (${error.message}). Its running jobs are marked lost ` +
          'and were stopped; the next call starts a fresh supervisor, so try again.'
        );
      case 'ERR_RUNTIME_CLOSED':
        return `${tool}: the session's job runtime is closed: no job can be started, read or stopped any more. ${nothing}`;
      default:
        return `${tool} failed: ${message} (${error.code}) ${nothing}`;
    }
  }
  if (error instanceof TypeError || error instanceof RangeError) return `${tool}: bad input: ${sentence(messageOf(error))} ${nothing}`;
  return `${tool} failed unexpectedly: ${sentence(messageOf(error))} This is a fault in heph-jobs or its host, not in the call.`;
}

export function jobNotFound(tool: string, id: unknown, known: unknown): string {
  const ids = Array.isArray(known) ? known.filter((value): value is number => typeof value === 'number') : [];
  const which =
    ids.length === 0
      ? 'No job exists yet (background starts one).'
      : `The jobs are ${ids.join(', ')}${typeof id === 'number' && id < Math.max(...ids) ? `; job ${id} may have finished long ago and been forgotten (only the newest finished jobs are kept)` : ''}.`;
  return `${tool}: there is no job ${String(id)}. ${which} job_status {} lists every job.`;
}

/** JSON on one line, spaced as the reports write it: `{"id": 0, "locks": ["port:5173"]}`. */
export function inlineJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inlineJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${inlineJson(item)}`).join(', ')}}`;
  }
  return JSON.stringify(value) ?? String(value);
}

/** Plain text of the verb a refused call did not do. */
function didNot(tool: string): string {
  if (tool === 'background') return 'started';
  if (tool === 'job_kill' || tool === '/job-kill') return 'stopped';
  return 'read';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}
