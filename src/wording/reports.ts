/**
 * The reports' lines: output notes, hints to read on, waits, kills, next steps, notices.
 */
import type {
  Dialect,
  EarlierLines,
  FilterFacts,
  JobNoticeFacts,
  NotifiedFacts,
  KillOutcome,
  LockBlockerFacts,
  LockOwnerFacts,
  LockResourceFacts,
  NextStepFacts,
  ReportState,
  WaitOutcome,
} from '../facts.js';
import { gone, plural, sentence } from './common.js';
import { limitReached } from './limits.js';
import { describeOwner, formatResource } from './locks.js';
import { inlineJson } from './tools.js';

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

/** A cursor read: `dropped` lines since the last read fell out of the ring before this read. */
export function goneSinceLastRead(dropped: number): string {
  return `(${plural(dropped, 'line')} since the last read ${gone(dropped)}: only the newest lines of a job's output are kept)`;
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

/** A cursor read whose `since` is at or past the job's line count: no line can follow it yet. */
export function cursorPastEnd(id: number, since: number, total: number): string {
  const lines = total === 0 ? 'no lines yet' : total === 1 ? '1 line, numbered 0' : `${total} lines, numbered 0 to ${total - 1}`;
  return `(since ${since} is past the end: job ${id} has ${lines})`;
}

/** A job_input that did not all go in (`stalled`: the job left its input full until the bound). */
export function inputShort(id: number, input: { bytes: number; written: number; stalled: boolean; waitedMs: number }): string {
  const rest = `the other ${input.bytes - input.written} were not sent; send them again once it reads`;
  if (input.stalled) {
    const seconds = Number((input.waitedMs / 1000).toFixed(1));
    return `(job ${id} is not reading its input: ${input.written} of ${input.bytes} bytes went in within ${seconds}s, then its input stayed full; ${rest})`;
  }
  return `(job ${id} no longer reads its input: ${input.written} of ${input.bytes} bytes went in; the other ${input.bytes - input.written} were not sent)`;
}

/** A job_input with close whose end of input could not be sent (the terminal's input stayed full). */
export function inputNotClosed(id: number): string {
  return `(job ${id}'s input was not closed: its terminal's input stayed full, so the end-of-file character was not sent; job_input with close sends it again)`;
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

/**
 * Errno codes that say a limit of the machine refused a job, not its command, with what each
 * means: a spawn, a cgroup or a lease failing so is fixed by ending jobs or raising the limit.
 */
export const MACHINE_LIMITS: Readonly<Record<string, string>> = {
  EAGAIN: 'a limit on processes or cgroups was reached: a pids limit, RLIMIT_NPROC or cgroup.max.descendants',
  ENOMEM: 'the machine, or a cgroup, is out of memory',
  ENOSPC: 'a disk or a kernel table is full: no space left on a device, or a limit such as inotify watches',
  EMFILE: 'the supervisor has as many files open as its RLIMIT_NOFILE allows',
  ENFILE: 'the system has as many files open as it allows',
  EDQUOT: 'a disk quota was reached',
};

/** What a refusal by limit `code` means, and what to do (the end of a failed job's report, or of an error). */
export function machineLimitAdvice(code: string, dialect: Dialect = 'tool'): string {
  const kill = dialect === 'shell' ? 'kill' : 'job_kill';
  return (
    `This is a limit of the machine (${code}: ${MACHINE_LIMITS[code] ?? 'a resource ran out'}), not a fault of the command: ` +
    `end jobs that are no longer needed with ${kill}, or ask the user to raise the limit; then ${backgroundAgain(dialect)}.`
  );
}

/** The last line of a report: what the model (or, in the `shell` dialect, the person) can do next. */
export function nextStep({ id, state, wants, reason, cleanedUp, limit, badLocks }: NextStepFacts, dialect: Dialect = 'tool'): string {
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
      if (limit !== undefined) return `job ${id} could not start: ${sentence(reason ?? 'the reason is unknown')} ${machineLimitAdvice(limit, dialect)}`;
      if (badLocks) return `job ${id} could not start: ${sentence(reason ?? 'its locks were refused')} Nothing of it ran; change its locks, then ${backgroundAgain(dialect)}.`;
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

/**
 * The line at the end of an answer that tells of a job's end (or late start), with what is left
 * to read: `(job 2 exited 1 0:42 npm test: 37 new lines; job_status {"id": 2} reads them)`.
 */
export function jobNotice({ id, event, state, header, unread, readFrom, limits, notified }: JobNoticeFacts, dialect: Dialect = 'tool'): string {
  if (event === 'notified' && notified) return `(${header}: ${notifiedText(id, notified, dialect)})`;
  const status = jobCall(dialect, 'job_status', id);
  const reached = limits ? limitReached(limits) : null;
  const started = event === 'started' ? 'started after waiting for its locks; ' : reached !== null ? `${reached}; ` : '';
  let rest: string;
  if (unread === null) rest = state === 'lost' ? `${status} says what is known` : state === 'failed' || state === 'cancelled' ? `${status} says why` : `${status} reads its output`;
  else if (unread === 0) rest = 'no new lines';
  else {
    const read = readFrom === null ? status : jobCall(dialect, 'job_status', id, { since: readFrom });
    rest = `${plural(unread, 'new line')}; ${read} reads ${unread === 1 ? 'it' : 'them'}`;
  }
  return `(${header}: ${started}${rest})`;
}

/** What a notify watch saw: the port it listens on, or the first matching line and how many matched. */
function notifiedText(id: number, { port, pattern, line, lineNumber, count, everyLine }: NotifiedFacts, dialect: Dialect): string {
  if (port !== undefined) return `listens on port ${port}`;
  const what = JSON.stringify(pattern ?? '');
  if (count === 1) return `line ${lineNumber} matches ${what}: ${line}`;
  const read = jobCall(dialect, 'job_status', id, { filter: pattern ?? '' });
  const every = everyLine ? '; every line matched, so a narrower notify tells more' : '';
  return `${count} new lines match ${what}, the first line ${lineNumber}: ${line}; ${read} reads them${every}`;
}

/** The list's line when there is no job at all. */
export function noJobsYet(dialect: Dialect = 'tool'): string {
  return `no jobs yet; ${backgroundCall(dialect)} starts one.`;
}

/** The list's last line. */
export function runningCount(running: number, maxJobs: number): string {
  return `${running} of ${maxJobs} running`;
}

/** Why a job is `lost`: its supervisor died while it ran (`cause`: how the runtime learned it). */
export function supervisorDiedReason(cause: string): string {
  return `its supervisor died (${cause})`;
}

/** A lost job's reason once the cleanup of what is left of it was refused (`cause`: the refusal). */
export function cleanupRefusedReason(reason: string, cause: string): string {
  return `${reason}; stopping what is left of it failed, so its locks stay held: ${cause}`;
}

/** Why a job is `lost` that was being started when its supervisor died. */
export function diedWhileStartingReason(cause: string): string {
  return `its supervisor died while the job was being started, so whether it ran is unknown; nothing of it was left running (${cause})`;
}
