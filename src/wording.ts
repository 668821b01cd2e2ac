/**
 * Every sentence a model or a person reads from heph-jobs, in one place: the reports' lines, the
 * tools' refusals and errors, the lock table's explanations, the limitations of a containment
 * mode. Code elsewhere decides *what* happened and passes facts here; only this module decides how
 * it is said, so the wording stays consistent and a change of wording is a change of one file.
 *
 * Sections: reports · tools · errors · locks · containment. (The tools' descriptions and the
 * descriptions of their input fields are part of the schemas, in src/tools/schema.ts.)
 */
// Imports here are types and the protocol's describer only: the lock table, the reports and the tools
// import this module, and a value imported back from them would be read before it is initialised.
import { describeValue } from './protocol/describe.js';
import type { Containment, LockDirInfo, LockDirProblem } from './protocol/messages.js';
import type { PatternProblem } from './protocol/pattern.js';
import type { KillOutcome, ReportState, WaitOutcome } from './reports/report.js';
import type { JsonSchema } from './tools/validate.js';

/** `3 lines`, `1 line`. */
function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

/** Ends a clause from elsewhere (an error message) as a sentence. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A value someone handed us, as JSON when it has a JSON form. */
function asJson(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

// ---- reports -------------------------------------------------------------------------------

/** `{"id": 0}`: a job's id as the tools take it. */
function idArg(id: number): string {
  return `{"id": ${id}}`;
}

/**
 * Whom a hint is written for: a model calls tools (`job_status {"id": 0}`); a person at the
 * heph-jobs shell types its commands (`status 0`). Only the calls a hint names differ.
 */
export type Dialect = 'tool' | 'shell';

/** The shell's word for each tool a hint names (the tool's name without `job_`). */
const SHELL_WORDS = { job_status: 'status', job_kill: 'kill' } as const;

/** A call on job `id` as `dialect` writes it: `job_status {"id": 0, "lines": 5}` or `status 0 --lines 5`. */
function jobCall(dialect: Dialect, tool: keyof typeof SHELL_WORDS, id: number, fields: Record<string, number | string> = {}): string {
  if (dialect === 'shell') {
    const flags = Object.entries(fields).map(([name, value]) => ` --${name} ${typeof value === 'string' ? shellQuoted(value) : value}`);
    return `${SHELL_WORDS[tool]} ${id}${flags.join('')}`;
  }
  const rest = Object.entries(fields).map(([name, value]) => `, "${name}": ${typeof value === 'string' ? JSON.stringify(value) : value}`);
  return `${tool} {"id": ${id}${rest.join('')}}`;
}

/** `'text'` as the shell's words read it back (a `'` inside as `'\''`). */
function shellQuoted(text: string): string {
  return `'${text.replace(/'/g, "'\\''")}'`;
}

/** Starting a command, as `dialect` writes it. */
function backgroundCall(dialect: Dialect): string {
  return dialect === 'shell' ? 'background CMD' : 'background {"command": "..."}';
}

/** What the caller does again with background: a model calls it, a person runs it. */
function backgroundAgain(dialect: Dialect): string {
  return `${dialect === 'shell' ? 'run' : 'call'} background again`;
}

/** Marks appended to an output line: cut when kept, clipped by this read's byte bound. */
export function outputLineNotes(cutBytes: number, clippedBytes: number): string {
  let note = '';
  if (cutBytes > 0) note += ` [line cut: ${plural(cutBytes, 'more byte')} not kept]`;
  if (clippedBytes > 0) note += ` [${plural(clippedBytes, 'more byte')} not shown: this read reached its size limit]`;
  return note;
}

/** Introduces the first lines of a job, shown when the tail no longer reaches them. */
export function headLinesIntro(count: number): string {
  return `(the first ${plural(count, 'line')}, kept from the start:)`;
}

function gone(count: number): string {
  return count === 1 ? 'is gone' : 'are gone';
}

/** A cursor read: `dropped` lines since the last read fell out of the ring before this read. */
export function goneSinceLastRead(dropped: number): string {
  return `(${plural(dropped, 'line')} since the last read ${gone(dropped)}: only the newest lines of a job's output are kept)`;
}

/** What a tail read says about the `earlier` lines before those shown (`dropped` of them no longer kept). */
export interface EarlierLines {
  id: number;
  earlier: number;
  dropped: number;
  /** Lines this read shows. */
  shown: number;
  /** The read stopped at its byte bound: asking for more lines would not show more. */
  filledRead: boolean;
}

/** The line before a tail read's output that says what came earlier and whether it can still be read. */
export function earlierLines({ id, earlier, dropped, shown, filledRead }: EarlierLines, dialect: Dialect = 'tool'): string {
  const readable = earlier - dropped;
  if (filledRead) {
    const lost = dropped > 0 ? `; the first ${dropped} of them ${gone(dropped)}, since only the newest lines are kept` : '';
    return `(${plural(earlier, 'earlier line')} not shown: the lines shown already fill what one read returns${lost})`;
  }
  const more = jobCall(dialect, 'job_status', id, { lines: readable + shown });
  if (dropped === 0) return `(${plural(earlier, 'earlier line')} not shown; ${more} shows them)`;
  if (readable === 0) return `(${plural(earlier, 'earlier line')} ${gone(earlier)}: only the newest lines of a job's output are kept)`;
  return (
    `(${plural(earlier, 'earlier line')}: the first ${dropped} ${gone(dropped)}, since only the newest lines are kept; ` +
    `the other ${readable} can be shown with ${more})`
  );
}

/**
 * The last line of a cursor read: the call that reads on from where it stopped (`filter`: the
 * filtered read's pattern, kept in the call). `filled`: the read stopped at its byte bound.
 */
export function readOnFrom(id: number, next: number, dialect: Dialect = 'tool', filled = true, filter?: string): string {
  const call = jobCall(dialect, 'job_status', id, { since: next, ...(filter === undefined ? {} : { filter }) });
  return filled ? `(this read reached its size limit; ${call} reads on)` : `(${call} reads on)`;
}

/** A read of new lines only (createTools `reads: 'new'`) when every line was shown before. */
export function nothingNew(total: number): string {
  return `(nothing new: all ${plural(total, 'line')} of its output ${total === 1 ? 'was' : 'were'} shown before)`;
}

/**
 * A read of new lines only that shows the newest: `skipped` unseen lines after line `from` are left
 * out, the first `gone` of them no longer kept.
 */
export function unseenSkipped(id: number, from: number, skipped: number, gone: number, dialect: Dialect = 'tool'): string {
  const lines = plural(skipped, 'unseen line');
  const call = jobCall(dialect, 'job_status', id, { since: from });
  if (gone === 0) return `(${lines} skipped; ${call} reads them)`;
  if (gone >= skipped) return `(${lines} skipped: ${gone === 1 ? 'it is' : 'they are'} gone, since only the newest lines are kept)`;
  return `(${lines} skipped, the first ${gone} gone since only the newest lines are kept; ${call} reads the rest)`;
}

/** What a filtered read found and shows. */
export interface FilterFacts {
  id: number;
  pattern: string;
  /** Kept lines (after `since`) that match. */
  matched: number;
  shown: number;
  /** Lines (after `since`) no longer kept, so not searched. */
  dropped: number;
  /** A page after `since` (the first matches; a read-on line follows) rather than the newest. */
  page: boolean;
  /** The read stopped at its byte bound. */
  filledRead: boolean;
}

/** The line before a filtered read's lines: how many match, which are shown, what was not searched. */
export function filterNote({ id, pattern, matched, shown, dropped, page, filledRead }: FilterFacts, dialect: Dialect = 'tool'): string {
  const what = `/${pattern}/`;
  let note: string;
  if (matched === 0) note = `no kept line matches ${what}`;
  else {
    note = `${plural(matched, 'line')} ${matched === 1 ? 'matches' : 'match'} ${what}, numbered as since counts`;
    if (shown < matched) {
      const which = page ? `the first ${shown}` : `the newest ${shown}`;
      if (filledRead) note += `; ${which} fill what one read returns`;
      else if (page) note += `; ${which} shown`;
      else note += `; ${which} shown; ${jobCall(dialect, 'job_status', id, { filter: pattern, lines: matched })} shows all`;
    }
  }
  if (dropped > 0) note += `; ${plural(dropped, 'earlier line')} ${dropped === 1 ? 'is' : 'are'} no longer kept and ${dropped === 1 ? 'was' : 'were'} not searched`;
  return `(${note})`;
}

/** A read that shows no line: nothing new since the cursor, nothing yet, or nothing ever. */
export function noOutput(which: 'since-last-read' | 'yet' | 'ever'): string {
  if (which === 'since-last-read') return '(no new output since the last read)';
  return which === 'yet' ? '(no output yet)' : '(no output)';
}

/** One line saying how a wait before the read ended: matched, ended, or timed out. */
export function waitedLine(waited: WaitOutcome, stillRunning: boolean): string {
  const seconds = `${(waited.waitedMs / 1000).toFixed(1)}s`;
  const job = `the job ${stillRunning ? 'is still running' : 'has ended'}`;
  switch (waited.kind) {
    case 'matched':
      return `(after ${seconds} a line matched /${waited.pattern}/: ${JSON.stringify(waited.line)})`;
    case 'listening':
      return `(after ${seconds} the job listens on port ${waited.port})`;
    case 'ended':
      return `(after ${seconds} the job ended)`;
    default: {
      const matched = waited.pattern ? `no new line matched /${waited.pattern}/` : null;
      if (waited.port !== undefined) {
        const state = stillRunning ? 'is still running' : 'has ended';
        return `(waited ${seconds}: ${matched ? `${matched}, ` : ''}the job does not listen on port ${waited.port} and ${state})`;
      }
      return matched ? `(waited ${seconds}: ${matched} and ${job})` : `(waited ${seconds}: ${job})`;
    }
  }
}

/** `2s`, `0.3s`: a grace as a kill line says it. */
function graceText(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))}s`;
}

/**
 * What a kill found, when it did not simply stop a running job: the job had already ended (`how`
 * is its state as the header says it, `exited 3`), or it still runs after SIGINT, and which
 * signals the next kill sends.
 */
export function killOutcome(id: number, how: string, outcome: KillOutcome, dialect: Dialect = 'tool'): string {
  if (outcome.kind === 'ended') {
    return outcome.leftovers
      ? `(job ${id}'s shell had already ended (${how}) before this call; this call stopped the processes it left running)`
      : `(job ${id} had already ended (${how}) before this call; nothing was stopped)`;
  }
  return (
    `(job ${id} ignored SIGINT${outcome.graceMs > 0 ? ` for ${graceText(outcome.graceMs)}` : ''} and still runs; ` +
    `${jobCall(dialect, 'job_kill', id)} sends SIGTERM, then SIGKILL after ${graceText(outcome.nextGraceMs)})`
  );
}

/**
 * A wait cut to the call's cap (its client gives up on a call sooner than the wait asked) that ran
 * out: what is left of it, for the same line or port, is one job_status call away.
 */
export function waitCut(id: number, waited: { pattern?: string; port?: number }, cut: { askedMs: number; capMs: number }, dialect: Dialect = 'tool'): string {
  const tenths = (ms: number) => Math.round(ms / 100) / 10;
  const left = tenths(cut.askedMs - cut.capMs);
  const goOn =
    dialect === 'shell'
      ? jobCall(dialect, 'job_status', id, { wait: left })
      : `job_status ${inlineJson({ id, wait: left, ...(waited.pattern === undefined ? {} : { until: waited.pattern }), ...(waited.port === undefined ? {} : { until_port: waited.port }) })}`;
  return `(the wait was cut at ${tenths(cut.capMs)}s of the ${tenths(cut.askedMs)}s asked, so that the call answers before its client gives up; ${goOn} waits on)`;
}

/** `elapsed`: the job's timeout as a report writes a duration (`1:30`). */
export function stoppedByTimeout(elapsed: string): string {
  return `(stopped by its timeout of ${elapsed})`;
}

/** The facts of a job that its report's last line depends on. */
export interface NextStepFacts {
  id: number;
  state: ReportState;
  /** The resources a waiting job waits for. */
  wants: readonly LockResourceFacts[];
  reason: string | null;
  cleanedUp: boolean;
}

/** The last line of a report: what the model (or, in the `shell` dialect, the person) can do next. */
export function nextStep({ id, state, wants, reason, cleanedUp }: NextStepFacts, dialect: Dialect = 'tool'): string {
  const status = jobCall(dialect, 'job_status', id);
  const kill = jobCall(dialect, 'job_kill', id);
  switch (state) {
    case 'running':
      return `${status} reads more; ${kill} stops it.`;
    case 'waiting': {
      const what = wants.length > 0 ? `: ${wants.map(formatResource).join(', ')}` : '';
      return `job ${id} has not started: it waits for its locks${what}. ${status} shows when it runs; ${kill} gives up on it.`;
    }
    case 'failed':
      return `job ${id} could not start: ${sentence(reason ?? 'the reason is unknown')} Fix the command or its working directory, then ${backgroundAgain(dialect)}.`;
    case 'cancelled':
      return `job ${id} never started: ${sentence(reason ?? 'its wait for its locks was given up')} Nothing of it ran; ${backgroundAgain(dialect)} if it is still needed.`;
    case 'lost': {
      const rest = cleanedUp ? '' : ' What is left of it is still being stopped.';
      return `job ${id} is lost: ${sentence(reason ?? 'its supervisor died')}${rest} Its output is gone; ${backgroundAgain(dialect)} if the job is still needed.`;
    }
    default:
      return cleanedUp
        ? `job ${id} has ended; its output stays readable with ${status}.`
        : `job ${id}'s shell has ended, but processes it started are still being stopped; ${status} shows when they are gone.`;
  }
}

/**
 * Why a job that waited for its locks never started (its state is `cancelled`): a kill stopped it,
 * its caller's signal cancelled the wait, or its lock timeout ran out. `message` is the lock
 * table's, which names the holders.
 */
export function cancelledReason(how: 'stopped' | 'cancelled' | 'timed-out', message: string, wants: readonly LockResourceFacts[]): string {
  const locks = wants.map(formatResource).join(', ');
  if (how === 'stopped') return `it was stopped while it waited for its locks (${locks})`;
  if (how === 'timed-out') return `it gave up waiting for its locks: ${message}`;
  return `the wait for its locks was cancelled by its caller: ${message}`;
}

/** Who stands in a waiting job's way, for a model: `job 0 (npm run dev)`, `job_status {"id": 0}`, `"git push" (kind=host)`. */
function holderName(owner: LockOwnerFacts): string {
  const jobId = owner['jobId'];
  if (owner['kind'] === 'job' && typeof jobId === 'number') return `job ${jobId} (${owner.label})`;
  if (owner['kind'] === 'tool') return owner.label;
  return describeOwner(owner);
}

/** Holders named in a waiting job's report; the lock table's snapshot has them all. */
const MAX_HOLDERS_SHOWN = 3;

/**
 * A waiting job's line before its last: who holds what it waits for, and that it keeps its place.
 * `lockWaitMs`: how long the call that answers with it waited (null for a read of it later). Null
 * when there is nothing to say (no holder known and no call waited).
 */
export function lockWaitLine(id: number, blockedBy: readonly LockBlockerFacts[], lockWaitMs: number | null): string | null {
  if (blockedBy.length === 0 && lockWaitMs === null) return null;
  const waited = lockWaitMs === null ? '' : `waited ${(lockWaitMs / 1000).toFixed(1)}s for its locks: `;
  return `(${waited}${holders(blockedBy)}; job ${id} keeps its place and starts by itself once they are free)`;
}

/** `port:5173 is held by job 0 (npm run dev)`, `;`-joined; what to say when no holder is in this runtime's table. */
function holders(blockedBy: readonly LockBlockerFacts[]): string {
  const clauses: string[] = [];
  for (const b of blockedBy) {
    const clause = `${formatResource(b.wants)} ${b.holding ? 'is held by' : 'is wanted first by'} ${holderName(b.owner)}`;
    if (!clauses.includes(clause)) clauses.push(clause);
  }
  // No holder in this runtime's table: the kernel lock is held by another runtime on this machine.
  if (clauses.length === 0) return 'they are held outside this session (another heph-jobs session on this machine)';
  const shown = clauses.length > MAX_HOLDERS_SHOWN ? [...clauses.slice(0, MAX_HOLDERS_SHOWN), `${clauses.length - MAX_HOLDERS_SHOWN} more`] : clauses;
  return shown.join('; ');
}

/**
 * The shell's line while a `background` waits for its locks (the answer comes when the job starts,
 * or when its wait is up): what it waits for, who holds it, and what Ctrl-C does.
 */
export function waitingForLocksNow(id: number, wants: readonly LockResourceFacts[], blockedBy: readonly LockBlockerFacts[]): string {
  return (
    `job ${id} waits for its locks (${wants.map(formatResource).join(', ')}): ${holders(blockedBy)}. ` +
    `Ctrl-C stops waiting; job ${id} keeps its place and starts by itself (kill ${id} gives up on it).`
  );
}

/** The facts of a notice: a job the model had not heard of ended, or started after waiting for its locks. */
export interface JobNoticeFacts {
  id: number;
  /** `ended`: it exited, was killed, failed, was cancelled or lost; `started`: it runs after waiting for its locks. */
  event: 'ended' | 'started';
  state: ReportState;
  /** The job's report header when told. */
  header: string;
  /** Lines of its output after the last line any answer showed; null when its output cannot be read (it never ran, or it is gone). */
  unread: number | null;
  /** More unread lines than a default read shows: the `since` that reads them all (the last line shown); else null. */
  readFrom: number | null;
}

/**
 * The line at the end of an answer that tells of a job's end (or late start), with what is left
 * to read: `(job 2 exited 1 0:42 npm test: 37 new lines; job_status {"id": 2} reads them)`.
 */
export function jobNotice({ id, event, state, header, unread, readFrom }: JobNoticeFacts, dialect: Dialect = 'tool'): string {
  const status = jobCall(dialect, 'job_status', id);
  const started = event === 'started' ? 'started after waiting for its locks; ' : '';
  let rest: string;
  if (unread === null) rest = state === 'lost' ? `${status} says what is known` : state === 'failed' || state === 'cancelled' ? `${status} says why` : `${status} reads its output`;
  else if (unread === 0) rest = 'no new lines';
  else {
    const read = readFrom === null ? status : jobCall(dialect, 'job_status', id, { since: readFrom });
    rest = `${plural(unread, 'new line')}; ${read} reads ${unread === 1 ? 'it' : 'them'}`;
  }
  return `(${header}: ${started}${rest})`;
}

/** The list's line when there is no job at all. */
export function noJobsYet(dialect: Dialect = 'tool'): string {
  return `no jobs yet; ${backgroundCall(dialect)} starts one.`;
}

/** The list's last line. */
export function runningCount(running: number, maxJobs: number): string {
  return `${running} of ${maxJobs} running`;
}

// ---- tools ---------------------------------------------------------------------------------

/** `background(npm run dev)`: the exact string an approval "always" remembers. */
export function permissionPattern(tool: string, subject: string): string {
  return `${tool}(${subject})`;
}

/** What a job_input call does, for its permission pattern: `sh -i <- "ls\n"`, `sh -i <- "y\n" + EOF`, `sh -i <- EOF`. */
export function inputSubject(command: string, text: string, close: boolean): string {
  const written = text === '' && close ? 'EOF' : `${JSON.stringify(text)}${close ? ' + EOF' : ''}`;
  return `${command} <- ${written}`;
}

/** A tool call as the lock table names its holder: `job_status {"id": 0}`, `job_status {}`. */
export function callLabel(tool: string, id?: number): string {
  return id === undefined ? `${tool} {}` : `${tool} ${idArg(id)}`;
}

/** Plain text of the verb a refused call did not do. */
function didNot(tool: string): string {
  if (tool === 'background') return 'started';
  if (tool === 'job_kill' || tool === '/job-kill') return 'stopped';
  if (tool === 'job_input') return 'written';
  if (tool === 'job_restart') return 'restarted';
  return 'read';
}

function article(noun: string): string {
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

/** "a string of 1 to 9 characters" → "strings of 1 to 9 characters". */
function pluralPhrase(phrase: string): string {
  return phrase.replace(/^(?:a|an) (\w+)/, (_, noun: string) => `${noun}s`);
}

/** What a schema accepts, as words: "a whole number from 0 to 2000", "an array of at most 32 strings". */
export function expectation(schema: JsonSchema): string {
  switch (schema.type) {
    case 'string': {
      if (schema.enum) return `one of ${schema.enum.map((value) => JSON.stringify(value)).join(', ')}`;
      const { minLength: min, maxLength: max } = schema;
      if (min !== undefined && min > 0 && max !== undefined) return `a string of ${min} to ${max} characters`;
      if (min !== undefined && min > 0) return `a non-empty string`;
      if (max !== undefined) return `a string of at most ${max} characters`;
      return 'a string';
    }
    case 'integer':
    case 'number': {
      const noun = schema.type === 'integer' ? 'whole number' : 'number';
      const { minimum: min, maximum: max, exclusiveMinimum: above } = schema;
      if (above !== undefined && max !== undefined) return `${article(noun)} above ${above} and up to ${max}`;
      if (above !== undefined) return `${article(noun)} above ${above}`;
      if (min !== undefined && max !== undefined) return `${article(noun)} from ${min} to ${max}`;
      if (min !== undefined) return `${article(noun)} from ${min} up`;
      if (max !== undefined) return `${article(noun)} up to ${max}`;
      return article(noun);
    }
    case 'boolean':
      return 'true or false';
    case 'array': {
      const item = schema.items ? pluralPhrase(expectation(schema.items)) : 'values';
      if (schema.maxItems !== undefined) return `an array of at most ${schema.maxItems} ${item}`;
      return `an array of ${item}`;
    }
    case 'object':
      return 'a JSON object';
    default:
      return 'any value';
  }
}

/** The accepted shape of an object schema in one line: `{"id"?: whole number, "lines"?: ...}`. */
export function describeAccepted(schema: JsonSchema): string {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const shape = expectation(property).replace(/^(?:a|an) /, '');
    return `${JSON.stringify(name)}${required.has(name) ? '' : '?'}: ${shape}`;
  });
  return `{${fields.join(', ')}}`;
}

/** A value the schema does not accept. `name` is the field's path, or `the input`. */
export function notAccepted(name: string, schema: JsonSchema, value: unknown): string {
  return `${name} must be ${expectation(schema)}; received ${describeValue(value, 'spoken')}`;
}

/** A field the schema does not know. `path` is the object's path, '' for the input itself. */
export function unknownField(path: string, key: string, accepted: readonly string[]): string {
  const fields = accepted.map((field) => JSON.stringify(field)).join(', ');
  return `${path === '' ? '' : `${path}: `}unknown field ${JSON.stringify(key)} (the accepted fields are ${fields || 'none'})`;
}

export function missingField(path: string): string {
  return `${path} is required and missing`;
}

/** JSON on one line, spaced as the reports write it: `{"id": 0, "locks": ["port:5173"]}`. */
export function inlineJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inlineJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${inlineJson(item)}`).join(', ')}}`;
  }
  return asJson(value);
}

/**
 * Input the schema refuses, in one sentence: the field and its rule (the problem says both). The
 * schema is not repeated, as the model has it already; only an input that is not an object at all
 * gets an example call.
 */
export function badInput(tool: string, problem: string, schema: JsonSchema): string {
  const example = problem.startsWith('the input ') ? schema.examples?.[1] ?? schema.examples?.[0] : undefined;
  const shown = example === undefined ? '' : ` For example: ${tool} ${inlineJson(example)}.`;
  return `${tool}: bad input: ${problem}.${shown} Nothing was run.`;
}

/** Input the schema accepts but the runtime would refuse (a blank command, a NUL byte): said before anyone is asked. */
export function refusedInput(tool: string, problem: string): string {
  return `${tool}: bad input: ${sentence(problem)} Nothing was run.`;
}

export function linesWithoutId(): string {
  return 'job_status: bad input: "lines" needs an "id" (it says how many lines of that job to show). Use {"id": 0, "lines": 200} for one job, or {} to list every job.';
}

/** `/job-kill` followed by something that is not a job number. */
export function notAJobNumber(raw: unknown): string {
  return `/job-kill: ${asJson(raw)} is not a job number; use /job-kill followed by the number job_status shows, e.g. /job-kill 0.`;
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
    `${tool} is refused: the approver answered ${asJson(answer)} for ${pattern}, which is not ` +
    `"once", "always" or "deny"; it counts as a denial, so nothing was ${didNot(tool)}.`
  );
}

/**
 * job_status / job_kill whose own rules overlap what the target holds, or, while it still waits
 * for its locks, what it waits for: fail at once. In each conflict, `a` is the tool's resource and
 * `b` the target's.
 */
export function selfDeadlock(
  tool: string,
  job: { id: number; command: string },
  conflicts: readonly { a: LockResourceFacts; b: LockResourceFacts }[],
  waiting = false,
): string {
  const names = (side: 'a' | 'b') => [...new Set(conflicts.map((conflict) => formatResource(conflict[side])))].join(', ');
  const target = `job ${job.id} (${job.command})`;
  const claim = waiting ? `is waiting for ${names('b')} and will hold it until it has ended` : `holds ${names('b')} until it has ended`;
  return (
    `${tool} cannot run: its lock rules need ${names('a')}, and ${target} ${claim}, ` +
    `so this call would wait on its own target. Nothing was ${didNot(tool)}. ` +
    `Ask the user to run /job-kill ${job.id}, which stops the job without waiting for any lock.`
  );
}

/** createTools was configured with something it cannot use (a host's mistake, thrown at once). */
export const toolsConfig = {
  notAnObject: (value: unknown) => `createTools options must be an object; received ${typeof value}`,
  badApprover: (value: unknown) =>
    `createTools option approve must be a function (request) => Promise<"once" | "always" | "deny">; received ${typeof value}`,
  contextNotAnObject: (name: string, value: unknown) => `${name} must be an object { cwd?, env?, ref? }; received ${value === null ? 'null' : typeof value}`,
  badCwd: (name: string, value: unknown) => `${name}.cwd must be a string (a directory); received ${typeof value}`,
  badEnv: (name: string, value: unknown) => `${name}.env must be an object of strings; received ${typeof value}`,
  badRef: (name: string, value: unknown) => `${name}.ref must be a string; received ${typeof value}`,
  badFlavor: (value: unknown, flavors: readonly string[]) =>
    `tools.definitions flavor must be one of ${flavors.map((flavor) => JSON.stringify(flavor)).join(', ')}; received ${describeValue(value, 'spoken')}`,
  badReads: (value: unknown) => `createTools option reads must be "tail" or "new"; received ${describeValue(value, 'spoken')}`,
};

/** A progress message while a call waits (an MCP request that carries a progress token). */
export function stillWaiting(tool: string, id: unknown, elapsedMs: number): string {
  const call = typeof id === 'number' ? callLabel(tool, id) : tool;
  return `${call}: waiting, ${(elapsedMs / 1000).toFixed(1)}s so far`;
}

// ---- errors --------------------------------------------------------------------------------
// An error's own message is a statement of fact for the engineer who catches it
// (src/protocol/errors.ts); what a model reads about it is worded here from its code and details.

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

// ---- locks ---------------------------------------------------------------------------------
// The lock table's explanations. Callers pass facts: owners, resources, blockers, and received
// values already shown with describeValue (src/protocol/describe.ts).

/** A lock owner as a message sees it: its label, then its other plain fields. */
export interface LockOwnerFacts {
  readonly label: string;
  readonly [key: string]: unknown;
}

/** One resource of a lock request as a message sees it. */
export interface LockResourceFacts {
  readonly resource: string;
  readonly mode: 'exclusive' | 'shared';
}

/** A lock request as a message sees it. */
export interface LockRequestFacts {
  readonly owner: LockOwnerFacts;
  readonly resources: readonly LockResourceFacts[];
}

/** Something in a request's way: it holds `resource` (or waits for it, having arrived earlier). */
export interface LockBlockerFacts {
  readonly owner: LockOwnerFacts;
  readonly holding: boolean;
  readonly resource: LockResourceFacts;
  /** The blocked request's resource that conflicts with `resource`. */
  readonly wants: LockResourceFacts;
}

/** Blockers named in one message; a long queue would otherwise make a message of thousands of lines. */
const MAX_BLOCKERS_SHOWN = 8;

/** `port:5173` or `path:/x (shared)`: how a resource is shown in messages. */
export function formatResource(res: LockResourceFacts): string {
  return res.mode === 'shared' ? `${res.resource} (shared)` : res.resource;
}

function listLockResources(resources: readonly LockResourceFacts[]): string {
  return resources.length === 0 ? '(no resources)' : resources.map(formatResource).join(', ');
}

/** `"npm run dev" (kind=job, jobId=3)`: the label, then the owner's other plain fields. */
export function describeOwner(owner: LockOwnerFacts): string {
  const extras: string[] = [];
  for (const [key, value] of Object.entries(owner)) {
    if (key === 'label') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      extras.push(`${key}=${value}`);
    }
  }
  const label = JSON.stringify(owner.label);
  return extras.length === 0 ? label : `${label} (${extras.join(', ')})`;
}

/** `port:5173 is held by "npm run dev" (kind=job, jobId=3)`; one clause per blocker, `; `-joined. */
export function describeBlockers(blockers: readonly LockBlockerFacts[]): string {
  const clauses: string[] = [];
  for (const b of blockers) {
    const theirs = b.resource.resource === b.wants.resource ? '' : ` (through ${formatResource(b.resource)})`;
    const how = b.holding ? 'is held by' : 'is wanted first by';
    const who = b.holding ? describeOwner(b.owner) : `${describeOwner(b.owner)}, which arrived earlier and waits`;
    const clause = `${formatResource(b.wants)}${theirs} ${how} ${who}`;
    if (!clauses.includes(clause)) clauses.push(clause);
  }
  if (clauses.length <= MAX_BLOCKERS_SHOWN) return clauses.join('; ');
  const rest = clauses.length - MAX_BLOCKERS_SHOWN;
  return `${clauses.slice(0, MAX_BLOCKERS_SHOWN).join('; ')}; and ${rest} more (see the lock table snapshot)`;
}

/** `port:1, path:/x (shared) for "npm run dev" (kind=job)` */
function lockRequestText(req: LockRequestFacts): string {
  return `${listLockResources(req.resources)} for ${describeOwner(req.owner)}`;
}

/** What is in the way, then how to free it when jobs hold it (`holdingJobIds`). */
function blockedBy(blockers: readonly LockBlockerFacts[], holdingJobIds: readonly string[]): string {
  const hint =
    holdingJobIds.length === 0
      ? ''
      : ` To free them, stop the holding job: ${holdingJobIds.map((id) => `/job-kill ${id}`).join(', ')}.`;
  return `${describeBlockers(blockers)}.${hint}`;
}

/** LockTimeoutError: the wait for the table ran out. */
export function lockTimeoutMessage(
  req: LockRequestFacts,
  ms: number,
  blockers: readonly LockBlockerFacts[],
  holdingJobIds: readonly string[],
): string {
  return `timed out after ${ms} ms waiting for ${lockRequestText(req)}: ${blockedBy(blockers, holdingJobIds)}`;
}

/** LockTimeoutError: the table granted, the kernel locks (the backend) did not in time. */
export function lockBackendTimeoutMessage(req: LockRequestFacts, ms: number): string {
  return (
    `timed out after ${ms} ms waiting for the kernel locks on ${lockRequestText(req)}: this runtime grants ` +
    'them, but another process holds at least one (another heph runtime on this machine?)'
  );
}

/** LockBusyError: `wait: false` or tryAcquire, and something is in the way. */
export function lockBusyMessage(
  req: LockRequestFacts,
  blockers: readonly LockBlockerFacts[],
  holdingJobIds: readonly string[],
): string {
  return `cannot lock ${lockRequestText(req)} now: ${blockedBy(blockers, holdingJobIds)}`;
}

/** LockCancelledError: the caller's AbortSignal fired, while queued or while the backend was asked. */
export function lockCancelledMessage(
  req: LockRequestFacts,
  blockers: readonly LockBlockerFacts[],
  whileBackend: boolean,
): string {
  const where = whileBackend
    ? ' while waiting for the kernel locks'
    : blockers.length > 0
      ? ` while waiting (${describeBlockers(blockers)})`
      : ' before it could be granted';
  return `lock request for ${lockRequestText(req)} was cancelled${where}`;
}

/** LockSyncUnavailableError. */
export const LOCK_SYNC_UNAVAILABLE =
  'tryAcquire() cannot take locks synchronously on a table with a backend (the kernel locks ' +
  'are taken asynchronously); use `await table.acquire(owner, resources, { wait: false })`, ' +
  'which fails at once with ERR_LOCK_BUSY instead of waiting';

/** The process warning when a backend's release fails (the local hold is released anyway). */
export function lockBackendReleaseFailedWarning(leaseId: number, owner: LockOwnerFacts, error: string): string {
  return `heph-jobs: releasing the backend locks of lease ${leaseId} (${describeOwner(owner)}) failed: ${error}`;
}

export const LOCK_BACKEND_OPTION_REFUSED =
  'LockTable option "backend" must have an acquire(resources, owner, signal) method';

export function lockOwnerNotObjectMessage(shown: string): string {
  return (
    'lock owner must be an object with a "label" string, e.g. { kind: "job", jobId: 3, label: "npm run dev" }; ' +
    `received ${shown}`
  );
}

export function lockOwnerLabelMessage(shownLabel: string): string {
  return `lock owner needs a non-empty "label" string (shown in lock messages); received label ${shownLabel}`;
}

export function acquireOptionsNotObjectMessage(shown: string): string {
  return `acquire options must be an object; received ${shown}`;
}

const ACQUIRE_OPTION_ACCEPTS = { signal: 'an AbortSignal', wait: 'a boolean' } as const;

export function acquireOptionMessage(option: keyof typeof ACQUIRE_OPTION_ACCEPTS, shown: string): string {
  return `option "${option}" must be ${ACQUIRE_OPTION_ACCEPTS[option]}; received ${shown}`;
}

/** How the integer check names `timeoutMs`, so its message also says what Infinity means. */
export const ACQUIRE_TIMEOUT_OPTION = 'option "timeoutMs" (milliseconds; Infinity waits for ever)';

/** BadResourceError: `shown` is the received value, `reason` one of badResourceReason. */
export function badResourceMessage(shown: string, reason: string, maxLength: number): string {
  return (
    `bad lock resource ${shown}: ${reason}; expected "kind:value": kind made of lowercase letters, digits and ` +
    `"-", value non-empty without NUL or newline, at most ${maxLength} characters in all; ` +
    'a path: value must be absolute (e.g. "path:/repo/node_modules")'
  );
}

/** Why a resource is refused; also kept as the error's `details.reason`. */
export const badResourceReason = {
  notString: (type: string) => `a resource must be a string, got ${type}`,
  empty: 'it is empty',
  tooLong: (length: number, max: number) => `it is ${length} characters long, more than ${max}`,
  noColon: 'it has no ":" between kind and value',
  emptyKind: 'the kind before ":" is empty',
  badKind: (kind: string) =>
    `the kind ${JSON.stringify(kind)} may only contain lowercase letters, digits and "-"`,
  emptyValue: 'the value after ":" is empty',
  forbidden: (char: '\0' | '\n' | '\r', offset: number) =>
    `the value contains ${char === '\0' ? 'a NUL character' : 'a newline'} at offset ${offset}`,
  relativePath: 'a path: value must be an absolute path (start with "/")',
  objectWithoutResource:
    'an object resource needs a "resource" string, as in { resource: "path:/x", mode: "shared" }',
  notSpec: 'a resource must be a "kind:value" string or { resource, mode }',
} as const;

export function badLockModeMessage(shownMode: string, shownResource: string): string {
  return `bad lock mode ${shownMode} for ${shownResource}: mode must be "exclusive" (the default) or "shared"`;
}

/** The resources of a request are not an array; `lone` is the string passed instead, if it was one. */
export function badLockRequestMessage(shown: string, lone: string | undefined): string {
  const hint = lone === undefined ? '' : `; wrap a single resource in an array: [${JSON.stringify(lone)}]`;
  return (
    `bad lock request ${shown}: resources must be an array of "kind:value" strings ` +
    `or { resource, mode } objects${hint}`
  );
}

/** BadLockRuleError for a template whose braces do not parse; `reason` one of ruleTemplateReason. */
export function badRuleTemplateMessage(template: string, rule: string, reason: string): string {
  return (
    `bad lock rule template ${JSON.stringify(template)} for ${JSON.stringify(rule)}: ${reason}; ` +
    'a template is a "kind:value" resource with {name} placeholders, e.g. "worktree:{ref}"'
  );
}

export const ruleTemplateReason = {
  strayClose: (offset: number) => `a "}" at offset ${offset} closes no "{"`,
  unclosed: (offset: number) => `the "{" at offset ${offset} is never closed`,
  notAName: (name: string) =>
    `placeholder ${JSON.stringify(`{${name}}`)} is not a name (letters, digits and "_", not starting with a digit)`,
} as const;

export function ruleTemplateNotStringMessage(shown: string, rule: string): string {
  return (
    `bad lock rule template ${shown} for ${JSON.stringify(rule)}: a template must be a string ` +
    'like "worktree:{ref}" or { resource: "path:{worktree}/node_modules", mode: "shared" }'
  );
}

export function lockRulesNotObjectMessage(shown: string): string {
  return (
    'lock rules must be an object mapping tool or action names to arrays of templates, e.g. ' +
    `{ background: ["worktree:{ref}"] }; received ${shown}`
  );
}

export function lockRulesNotArrayMessage(rule: string, shown: string): string {
  return `lock rules for ${JSON.stringify(rule)} must be an array of templates, e.g. ["worktree:{ref}"]; received ${shown}`;
}

/** `ref="main", worktree (not set by this call)`: the variables a rule could use, with their values. */
export function ruleVariablesText(vars: readonly (readonly [name: string, value: string | number | undefined])[]): string {
  return vars
    .map(([name, value]) => (value === undefined ? `${name} (not set by this call)` : `${name}=${JSON.stringify(value)}`))
    .join(', ');
}

/** BadLockRuleError: a placeholder that is neither standard nor passed (`unknown`), or not set by this call. */
export function rulePlaceholderMessage(
  template: string,
  rule: string,
  placeholder: string,
  unknown: boolean,
  variables: string,
): string {
  const problem = unknown
    ? `uses unknown placeholder {${placeholder}}`
    : `needs {${placeholder}}, which this call does not provide`;
  return `lock rule template ${JSON.stringify(template)} for ${JSON.stringify(rule)} ${problem}; variables available: ${variables}`;
}

/** BadResourceError: a rule expanded to a resource that parseResource refused (`inner` says why). */
export function badRuleExpansionMessage(template: string, rule: string, variables: string, inner: string): string {
  return (
    `lock rule template ${JSON.stringify(template)} for ${JSON.stringify(rule)} expanded to a bad resource ` +
    `(variables: ${variables}): ${inner}`
  );
}

// ---- containment ---------------------------------------------------------------------------

/** Never claim more than was tested: what each containment mode cannot prevent (capabilities().limitations). */
export function containmentLimitations(containment: Containment): string[] {
  const common =
    'At the end of the session (close, or the runtime dying) every process below the supervisor is killed, whichever job it came from.';
  const borrowed =
    "A process is never taken for a job's because it holds one of the job's pipes or its terminal (any process of this " +
    "user can open them through /proc, and tmux's server holds its control clients' stdio): job_kill and the cleanup " +
    'after a supervisor crash leave it alone, and it may keep the pipe open after the job is cleaned up.';
  if (containment.mode === 'cgroup') {
    return [
      'A job running with enough privilege (e.g. as root) can move its processes into another cgroup; job_kill still ' +
        "stops them through the subreaper and the job's environment marker, unless they also clear their environment " +
        '(e.g. `env -i`). Such a process also survives the death of the supervisor (it is reparented to init, where ' +
        'nothing tells it belonged to the job).',
      'If the runtime and the supervisor die together (one SIGKILL for both, an OOM kill), no job is stopped at that ' +
        'moment: the next supervisor this user starts kills every process carrying their marker and, when it makes ' +
        'its cgroups in the same place, everything left in their cgroups.',
      borrowed,
      common,
    ];
  }
  return [
    "Processes are attributed to a job by its session and process group, by descent, and by the job's environment " +
      'marker. One that leaves the session and clears its environment (e.g. `env -i setsid -f CMD`) escapes job_kill; ' +
      'so does one that writes a long process title over it. close() still kills it, but if the supervisor dies first it is reparented to init, where nothing tells it ' +
      'belonged to the job, and it survives.',
    'If the runtime and the supervisor die together (one SIGKILL for both, an OOM kill), no job is stopped at that ' +
      'moment: the next supervisor this user starts kills every process carrying their marker; ' +
      'one that cleared its environment (e.g. `env -i setsid -f CMD`) survives.',
    'Without cgroups, CPU time counts only live processes and their waited-for children.',
    borrowed,
    common,
  ];
}

// ---- the lock directory --------------------------------------------------------------------

function lockDirProblemText(problem: LockDirProblem): string {
  const mode = problem.mode === undefined ? '' : ` (mode ${problem.mode.toString(8).padStart(4, '0')})`;
  switch (problem.reason) {
    case 'symlink':
      return `${problem.level} is a symlink owned by uid ${problem.uid}, neither root nor this user`;
    case 'owner':
      return `${problem.level} belongs to uid ${problem.uid}`;
    case 'writable':
      return `${problem.level} may be written by other users and is not sticky${mode}`;
    case 'access':
      return `${problem.level} grants other users access${mode}`;
    case 'not-directory':
      return `${problem.level} is not a directory`;
    case 'changed':
      return `${problem.level} changed while it was being checked`;
    case 'loop':
      return `${problem.level} leads through too many symlinks`;
    case 'error':
      return `${problem.level} could not be checked: ${problem.detail ?? 'unknown error'}`;
  }
}

/**
 * What capabilities().limitations says when the lock directory asked for (or the default) was not
 * safe: which level failed, and what using a private directory instead costs.
 */
export function lockDirLimitations(info: LockDirInfo): string[] {
  if (!info.refused) return [];
  return [
    `The lock directory ${info.refused.dir} was not used because ${lockDirProblemText(info.refused.problem)}; ` +
      `resource locks are kept in the private lock directory ${info.dir} instead, so they exclude this runtime's own ` +
      'jobs and calls but no other runtime on this machine.',
  ];
}

/**
 * The process warning (code HEPH_JOBS_LOCK_BREACH) when a supervisor died and some of the leases it
 * held for this runtime were not kept in the lock vault: `open` could have been taken by another
 * runtime on this machine in between; `contended` (the host's own) are held by another now.
 */
export function lockBreachWarning(open: readonly string[], contended: readonly string[]): string {
  const lost =
    contended.length === 0
      ? ''
      : ` Another runtime holds ${contended.join(', ')} now, so this runtime's hold on them excludes only its own calls until released.`;
  return (
    `heph-jobs: the supervisor died while this runtime held ${open.join(', ')}, and their kernel locks were not kept ` +
    `through the crash: another runtime on this machine could have taken them before a fresh supervisor took them again.${lost}`
  );
}
