/**
 * Reports: what the tools return to the model and what the library returns to its host. The text
 * follows SPEC 3 exactly; the structured fields carry the same facts. This module decides which
 * lines a report has and in which order; src/wording/ says each of them.
 *
 * ```
 * job 0 running 0:02 npm run dev
 * > vite v5.0.0 dev server running at:
 * > http://localhost:5173/
 * job_status {"id": 0} reads more; job_kill {"id": 0} stops it.
 * ```
 */
import type { LimitFacts } from '../protocol/limits.js';
import type { InputWrite, OutputLine, OutputRead as OutputSnapshot } from '../protocol/messages.js';
import * as say from '../wording/index.js';
import type { Dialect, JobState, JobView, KillOutcome, LockBlockerFacts, LockResourceFacts, ReportState, WaitOutcome } from '../facts.js';
import { formatStats, type JobStats } from './stats-format.js';

export type { OutputSnapshot, Dialect };

export interface JobReport {
  id: number;
  state: ReportState;
  /** The leader's exit code, when `state` is `exited`. */
  exitCode: number | null;
  /** Name of the signal that ended the leader (`SIGTERM`), when `state` is `killed`. */
  signal: string | null;
  command: string;
  pid: number | null;
  /** CPU, memory, processes and listening ports at this read, while running; null otherwise. */
  stats: JobStats | null;
  startedAt: number;
  endedAt: number | null;
  elapsedMs: number;
  /** Every process of the job is gone and reaped (always true for a report of a finished job after kill). */
  cleanedUp: boolean;
  /** Why the job failed or was lost. */
  reason: string | null;
  /** A failed job refused by a limit of the machine: its errno code (`EAGAIN`, `ENOSPC`, `EMFILE`...), not the command's fault. */
  limit?: string;
  /** A failed job whose locks were refused as asked (ERR_BAD_RESOURCE): its locks are to change, not its command. */
  badLocks?: boolean;
  /** The read this report shows; null when none was made (lists, failed or lost jobs). */
  output: OutputSnapshot | null;
  /** The cursor (`since`) of the read `output` shows; null for a tail read, or when there was no read. */
  since: number | null;
  /** How a wait before the read ended; null when there was none. */
  waited: WaitOutcome | null;
  /** The pattern (its source) of a filtered read: `output.lines` are the lines that match. */
  filter?: string;
  /**
   * A read of new lines only (createTools `reads: 'new'`): the last line these tools had shown;
   * `output` holds only lines after it, and the unseen ones it leaves out are counted as skipped.
   */
  unseenAfter?: number;
  /** What a waiting job waits for (its locks); empty in every other state. */
  wants: LockResourceFacts[];
  /** What stands in a waiting job's way now: who holds (or, arrived earlier, waits for) its locks
   * in this runtime's lock table; empty in every other state, or when the holder is outside it. */
  blockedBy: LockBlockerFacts[];
  /** How long the call answered with this report waited for the job's locks before it answered
   * with the job still waiting (`background` with a wait it ran out of); null otherwise. */
  lockWaitMs: number | null;
  /** The job's timeout, in milliseconds, when that timeout stopped it; null otherwise. */
  timedOutAfterMs: number | null;
  /** Its limits, how each is held, and what they did (the limit that stopped it, the peak); null: none. */
  limits: LimitFacts | null;
  /** What a kill found (a report of `kill` alone): the job had already ended, or it outlived SIGINT. */
  kill?: KillOutcome;
  /** What the job_input this report answers wrote (`closed`: the end of input was sent, when asked). */
  input?: InputWrite & { closed?: boolean };
  /** The first line of `text`: `job <id> <state> <elapsed> <command>`. */
  header: string;
  text: string;
}

/** `job_status` with no id. */
export interface JobListReport {
  jobs: JobReport[];
  /** Jobs running now (they count toward `maxJobs`). */
  running: number;
  maxJobs: number;
  /** One header line per job, then `N of <maxJobs> running`. */
  text: string;
}

export interface ReportContext {
  /** The runtime's cap on jobs running at once. */
  maxJobs: number;
  /**
   * The `since` of a cursor read, when `output` came from one; a tail read when absent. It changes
   * how lines before those shown are described ("gone since the last read" vs. "earlier").
   */
  since?: number;
  /** How a wait before this read ended (job_status / background with wait). */
  waited?: WaitOutcome;
  /** The pattern of a filtered read, when `output` came from one. */
  filter?: string;
  /** What the kill this report answers found. */
  kill?: KillOutcome;
  /** What the job_input this report answers wrote. */
  input?: InputWrite & { closed?: boolean };
  /** The call waited this long for the job's locks and answers with the job still waiting. */
  lockWaitMs?: number;
}



/** `m:ss`, or `h:mm:ss` past an hour. */
export function formatElapsed(ms: number): string {
  const total = Number.isFinite(ms) ? Math.max(0, Math.floor(ms / 1000)) : 0;
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
}

function reportState(state: JobState): ReportState {
  return state === 'starting' ? 'running' : state;
}

function stateWord(record: JobView): string {
  return stateText({ state: reportState(record.state), exitCode: record.exitCode, signal: record.signal });
}

/** The state as the header says it: `running`, `exited 3`, `killed SIGTERM`. */
function stateText(report: Pick<JobReport, 'state' | 'exitCode' | 'signal'>): string {
  switch (report.state) {
    case 'exited':
      return `exited ${report.exitCode ?? '?'}`;
    case 'killed':
      return `killed ${report.signal ?? '?'}`;
    default:
      return report.state;
  }
}

/** `job <id> <state> <elapsed> <command>`; a multi-line command is shown on one line. */
export function headerLine(record: JobView, now = Date.now()): string {
  const elapsed = formatElapsed((record.endedAt ?? now) - record.startedAt);
  const stats = isRunning(record) && record.stats ? formatStats(record.stats) : '';
  return `job ${record.id} ${stateWord(record)} ${elapsed} ${oneLine(record.command)}${stats}`;
}

/** Newlines in a command would break "one header line per job": shown as `\n`. */
function oneLine(text: string): string {
  return text.replace(/\r?\n|\r/g, (match) => (match === '\r' ? '\\r' : '\\n'));
}

/** `> text`, `! text` for stderr; `numbered`: `> 153: text` (the number `since` takes). */
function outputLine(line: OutputLine & { clippedBytes?: number }, numbered = false): string {
  const mark = line.stream === 'stderr' ? '! ' : '> ';
  const number = numbered ? `${line.seq}: ` : '';
  return `${mark}${number}${line.text}${say.outputLineNotes(line.cutBytes, line.clippedBytes ?? 0)}`;
}

/** The line before the output that says what came earlier and whether it can still be read. */
function earlierLine(report: JobReport, output: OutputSnapshot, dialect: Dialect): string | null {
  if (report.since !== null) return output.dropped > 0 ? say.goneSinceLastRead(output.dropped) : null;
  if (output.earlier <= 0) return null;
  const facts = {
    id: report.id,
    earlier: output.earlier,
    dropped: Math.min(output.dropped, output.earlier),
    shown: output.lines.length,
    filledRead: output.limitedByBytes,
  };
  return say.earlierLines(facts, dialect);
}

/** A cursor read from at or past the last line there is (`since` 40 of a job of 30 lines). */
function pastEnd(report: JobReport, output: OutputSnapshot): boolean {
  return report.since !== null && report.since >= output.totalLines && output.lines.length === 0;
}

/** A filtered read: what matched, then the matching lines with their numbers. */
function filteredSection(report: JobReport, output: OutputSnapshot, pattern: string, dialect: Dialect): string[] {
  const facts = {
    id: report.id,
    pattern,
    matched: output.matched ?? output.lines.length,
    shown: output.lines.length,
    dropped: output.dropped,
    page: report.since !== null,
    filledRead: output.limitedByBytes,
  };
  const note = pastEnd(report, output) ? say.cursorPastEnd(report.id, report.since!, output.totalLines) : say.filterNote(facts, dialect);
  const lines = [note, ...output.lines.map((line) => outputLine(line, true))];
  if (report.since !== null) lines.push(say.readOnFrom(report.id, output.next, dialect, false, pattern));
  return lines;
}

/** A read of new lines only: the unseen head lines, what was skipped, the newest new lines. */
function newLinesSection(report: JobReport, output: OutputSnapshot, after: number, dialect: Dialect): string[] {
  if (output.head.length === 0 && output.lines.length === 0) {
    if (output.totalLines === 0) return [say.noOutput(report.state === 'running' ? 'yet' : 'ever')];
    return [say.nothingNew(output.totalLines)];
  }
  const lines = output.head.map((line) => outputLine(line));
  const from = Math.max(after, output.head.at(-1)?.seq ?? after);
  const first = output.lines[0];
  const firstShown = first === undefined || first.partial ? output.totalLines : first.seq;
  const skipped = firstShown - from - 1;
  if (skipped > 0) {
    // A tail read's `dropped` is the ring's first line: those before it are no longer kept.
    const gone = Math.max(0, Math.min(output.dropped, firstShown) - (from + 1));
    lines.push(say.unseenSkipped(report.id, from, skipped, gone, dialect));
  }
  for (const line of output.lines) lines.push(outputLine(line));
  return lines;
}

function outputSection(report: JobReport, output: OutputSnapshot, dialect: Dialect): string[] {
  if (report.filter !== undefined) return filteredSection(report, output, report.filter, dialect);
  if (report.unseenAfter !== undefined) return newLinesSection(report, output, report.unseenAfter, dialect);
  const lines: string[] = [];
  // The first lines of a job (the first fatal error is often early), when the tail no longer
  // shows them; the "earlier lines" note below them separates them from the tail.
  if (output.head.length > 0) {
    lines.push(say.headLinesIntro(output.head.length));
    for (const line of output.head) lines.push(outputLine(line));
  }
  const earlier = earlierLine(report, output, dialect);
  if (earlier !== null) lines.push(earlier);
  for (const line of output.lines) lines.push(outputLine(line));
  const cursorRead = report.since !== null;
  if (output.lines.length === 0 && earlier === null) {
    if (pastEnd(report, output)) lines.push(say.cursorPastEnd(report.id, report.since!, output.totalLines));
    else if (cursorRead) lines.push(say.noOutput('since-last-read'));
    else if (output.totalLines === 0) lines.push(say.noOutput(report.state === 'running' ? 'yet' : 'ever'));
  }
  // A cursor read always ends with the call that reads on from where it stopped.
  if (cursorRead) lines.push(say.readOnFrom(report.id, output.next, dialect, output.limitedByBytes));
  return lines;
}

function isRunning(record: JobView): boolean {
  return record.state === 'running' || record.state === 'starting';
}

/**
 * A report's text, from its fields alone: for a model (`tool`, the report's own `text`), or for a
 * person at the heph-jobs shell (`shell`: the calls it names are the shell's commands, `status 0`).
 */
export function reportText(report: JobReport, dialect: Dialect = 'tool'): string {
  const text = [report.header];
  if (report.output) text.push(...outputSection(report, report.output, dialect));
  if (report.waited) text.push(say.waitedLine(report.waited, report.state === 'running'));
  if (report.waited?.cut) text.push(say.waitCut(report.id, report.waited, report.waited.cut, dialect));
  if (report.timedOutAfterMs !== null) text.push(say.stoppedByTimeout(formatElapsed(report.timedOutAfterMs)));
  if (report.limits) text.push(...say.limitLines(report.limits, report.state));
  if (report.kill) text.push(say.killOutcome(report.id, stateText(report), report.kill, dialect));
  if (report.input && report.input.written < report.input.bytes) text.push(say.inputShort(report.id, report.input));
  if (report.input?.closed === false) text.push(say.inputNotClosed(report.id));
  const { id, state, wants, reason, cleanedUp, limit, badLocks } = report;
  // Reports built elsewhere (a host's own) may lack the lock fields.
  const lockWait = state === 'waiting' ? say.lockWaitLine(id, report.blockedBy ?? [], report.lockWaitMs ?? null) : null;
  if (lockWait !== null) text.push(lockWait);
  text.push(say.nextStep({ id, state, wants, reason, cleanedUp, ...(limit === undefined ? {} : { limit }), ...(badLocks ? { badLocks } : {}) }, dialect));
  return text.join('\n');
}

/** The report of one job: header, the output read (if any), and what to do next. */
export function buildReport(record: JobView, output: OutputSnapshot | null, context: ReportContext, now = Date.now()): JobReport {
  const state = reportState(record.state);
  const report: JobReport = {
    id: record.id,
    state,
    exitCode: record.exitCode,
    signal: record.signal,
    command: record.command,
    pid: record.pid,
    stats: isRunning(record) ? record.stats : null,
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    elapsedMs: Math.max(0, (record.endedAt ?? now) - record.startedAt),
    cleanedUp: record.cleanedUp,
    reason: record.reason,
    ...(state === 'failed' && record.limit !== undefined ? { limit: record.limit } : {}),
    ...(state === 'failed' && record.badLocks === true ? { badLocks: true } : {}),
    output,
    since: output && context.since !== undefined ? context.since : null,
    waited: context.waited ?? null,
    ...(output && context.filter !== undefined ? { filter: context.filter } : {}),
    wants: state === 'waiting' ? record.wants.map(({ resource, mode }) => ({ resource, mode })) : [],
    blockedBy: state === 'waiting' ? (record.blockedBy?.() ?? []) : [],
    lockWaitMs: state === 'waiting' ? (context.lockWaitMs ?? null) : null,
    timedOutAfterMs: record.timedOut ? (record.input.timeoutMs ?? 0) : null,
    limits: record.limits,
    ...(context.kill ? { kill: context.kill } : {}),
    ...(context.input ? { input: context.input } : {}),
    header: headerLine(record, now),
    text: '',
  };
  report.text = reportText(report);
  return report;
}

/** The shell's line while a `background` waits for its job's locks: what for, held by whom, what Ctrl-C does. */
export function waitingNowText(report: JobReport): string {
  return say.waitingForLocksNow(report.id, report.wants, report.blockedBy ?? []);
}

/** `job_status` with no id: one header line per job, oldest first, then `N of <maxJobs> running`. */
export function buildListReport(reports: readonly JobReport[], maxJobs: number): JobListReport {
  const running = reports.filter((report) => report.state === 'running').length;
  const list: JobListReport = { jobs: [...reports], running, maxJobs, text: '' };
  list.text = listReportText(list);
  return list;
}

/** The list's text, from its fields alone, for a model (`tool`) or a person at the shell (`shell`). */
export function listReportText(list: JobListReport, dialect: Dialect = 'tool'): string {
  const lines = list.jobs.map((report) => report.header);
  if (list.jobs.length === 0) lines.push(say.noJobsYet(dialect));
  lines.push(say.runningCount(list.running, list.maxJobs));
  return lines.join('\n');
}

/** The text of `buildListReport`. */
export function listText(reports: readonly JobReport[], maxJobs: number): string {
  return buildListReport(reports, maxJobs).text;
}

/** The limit that stopped a job in a few words, for a person's table (the shell's `watch`). */
export { limitStopWords } from '../wording/index.js';
