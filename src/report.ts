/**
 * Reports: what the tools return to the model and what the library returns to its host. The text
 * follows SPEC 3 exactly; the structured fields carry the same facts. Every sentence a model reads
 * about a job is worded here and nowhere else.
 *
 * ```
 * job 0 running 0:02 npm run dev
 * > vite v5.0.0 dev server running at:
 * > http://localhost:5173/
 * job_status {"id": 0} reads more; job_kill {"id": 0} stops it.
 * ```
 */
import type { JobRecord, JobState } from './runtime/job-record.js';
import type { OutputLine, OutputRead as OutputSnapshot } from './protocol/messages.js';
import { formatStats, type JobStats } from './stats-format.js';

export type { OutputSnapshot };

/** A job's state as reports show it (`starting` is internal and shown as `running`). */
export type ReportState = Exclude<JobState, 'starting'>;

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
  /** The read this report shows; null when none was made (lists, failed or lost jobs). */
  output: OutputSnapshot | null;
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
}

/** How a wait before a read ended, as the report says it. */
export type WaitOutcome = { kind: 'ended' | 'matched' | 'timed-out'; waitedMs: number; line?: string; pattern?: string };

/** One line saying how a wait ended: matched, ended, or timed out. */
function waitedLine(record: JobRecord, waited: WaitOutcome): string {
  const seconds = `${(waited.waitedMs / 1000).toFixed(1)}s`;
  switch (waited.kind) {
    case 'matched':
      return `(after ${seconds} a line matched /${waited.pattern}/: ${JSON.stringify(waited.line)})`;
    case 'ended':
      return `(after ${seconds} the job ended)`;
    default:
      return waited.pattern
        ? `(waited ${seconds}: no new line matched /${waited.pattern}/ and the job ${isRunning(record) ? 'is still running' : 'has ended'})`
        : `(waited ${seconds}: the job ${isRunning(record) ? 'is still running' : 'has ended'})`;
  }
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

function stateWord(record: JobRecord): string {
  switch (record.state) {
    case 'exited':
      return `exited ${record.exitCode ?? '?'}`;
    case 'killed':
      return `killed ${record.signal ?? '?'}`;
    default:
      return reportState(record.state);
  }
}

/** `job <id> <state> <elapsed> <command>`; a multi-line command is shown on one line. */
export function headerLine(record: JobRecord, now = Date.now()): string {
  const elapsed = formatElapsed((record.endedAt ?? now) - record.startedAt);
  const stats = isRunning(record) && record.stats ? formatStats(record.stats) : '';
  return `job ${record.id} ${stateWord(record)} ${elapsed} ${oneLine(record.command)}${stats}`;
}

/** Newlines in a command would break "one header line per job": shown as `\n`. */
function oneLine(text: string): string {
  return text.replace(/\r?\n|\r/g, (match) => (match === '\r' ? '\\r' : '\\n'));
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

function idArg(record: JobRecord): string {
  return `{"id": ${record.id}}`;
}

function outputLine(line: OutputLine & { clippedBytes?: number }): string {
  const mark = line.stream === 'stderr' ? '! ' : '> ';
  let note = '';
  if (line.cutBytes > 0) note += ` [line cut: ${plural(line.cutBytes, 'more byte')} not kept]`;
  if (line.clippedBytes !== undefined && line.clippedBytes > 0) {
    note += ` [${plural(line.clippedBytes, 'more byte')} not shown: this read reached its size limit]`;
  }
  return `${mark}${line.text}${note}`;
}

/** The line before the output that says what came earlier and whether it can still be read. */
function earlierLine(record: JobRecord, output: OutputSnapshot, context: ReportContext): string | null {
  const shown = output.lines.length;
  const gone = (count: number) => (count === 1 ? 'is gone' : 'are gone');
  if (context.since !== undefined) {
    if (output.dropped <= 0) return null;
    return `(${plural(output.dropped, 'line')} since the last read ${gone(output.dropped)}: only the newest lines of a job's output are kept)`;
  }
  const earlier = output.earlier;
  if (earlier <= 0) return null;
  const dropped = Math.min(output.dropped, earlier);
  const readable = earlier - dropped;
  if (output.limitedByBytes) {
    // The read stopped at its byte bound: asking for more lines would not show more.
    const lost = dropped > 0 ? `; the first ${dropped} of them ${gone(dropped)}, since only the newest lines are kept` : '';
    return `(${plural(earlier, 'earlier line')} not shown: the lines shown already fill what one read returns${lost})`;
  }
  const more = `job_status {"id": ${record.id}, "lines": ${readable + shown}}`;
  if (dropped === 0) return `(${plural(earlier, 'earlier line')} not shown; ${more} shows them)`;
  if (readable === 0) return `(${plural(earlier, 'earlier line')} ${gone(earlier)}: only the newest lines of a job's output are kept)`;
  return (
    `(${plural(earlier, 'earlier line')}: the first ${dropped} ${gone(dropped)}, since only the newest lines are kept; ` +
    `the other ${readable} can be shown with ${more})`
  );
}

function outputSection(record: JobRecord, output: OutputSnapshot, context: ReportContext): string[] {
  const lines: string[] = [];
  // The first lines of a job (the first fatal error is often early), when the tail no longer
  // shows them; the "earlier lines" note below them separates them from the tail.
  if (output.head.length > 0) {
    lines.push(`(the first ${plural(output.head.length, 'line')}, kept from the start:)`);
    for (const line of output.head) lines.push(outputLine(line));
  }
  const earlier = earlierLine(record, output, context);
  if (earlier !== null) lines.push(earlier);
  for (const line of output.lines) lines.push(outputLine(line));
  if (context.since !== undefined && output.limitedByBytes) {
    lines.push(`(this read reached its size limit; job_status {"id": ${record.id}, "since": ${output.next}} reads on)`);
  }
  if (output.lines.length === 0 && earlier === null) {
    if (context.since !== undefined) lines.push('(no new output since the last read)');
    else if (output.totalLines === 0) lines.push(isRunning(record) ? '(no output yet)' : '(no output)');
  }
  return lines;
}

function isRunning(record: JobRecord): boolean {
  return record.state === 'running' || record.state === 'starting';
}

/** The last line: what the model can do next. */
function nextStep(record: JobRecord): string {
  const id = idArg(record);
  switch (record.state) {
    case 'running':
    case 'starting':
      return `job_status ${id} reads more; job_kill ${id} stops it.`;
    case 'waiting': {
      const wants = record.wants.map((res) => (res.mode === 'shared' ? `${res.resource} (shared)` : res.resource));
      const what = wants.length > 0 ? `: ${wants.join(', ')}` : '';
      return `job ${record.id} has not started: it waits for its locks${what}. job_status ${id} shows when it runs; job_kill ${id} gives up on it.`;
    }
    case 'failed':
      return `job ${record.id} could not start: ${sentence(record.reason ?? 'the reason is unknown')} Fix the command or its working directory, then call background again.`;
    case 'lost': {
      const rest = record.cleanedUp ? '' : ' What is left of it is still being stopped.';
      return `job ${record.id} is lost: ${sentence(record.reason ?? 'its supervisor died')}${rest} Its output is gone; call background again if the job is still needed.`;
    }
    default:
      return record.cleanedUp
        ? `job ${record.id} has ended; its output stays readable with job_status ${id}.`
        : `job ${record.id}'s shell has ended, but processes it started are still being stopped; job_status ${id} shows when they are gone.`;
  }
}

/** Ends a clause from elsewhere (an error message) as a sentence. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

/** The report of one job: header, the output read (if any), and what to do next. */
export function buildReport(record: JobRecord, output: OutputSnapshot | null, context: ReportContext, now = Date.now()): JobReport {
  const header = headerLine(record, now);
  const text = [header];
  if (output) text.push(...outputSection(record, output, context));
  if (context.waited) text.push(waitedLine(record, context.waited));
  if (record.timedOut) text.push(`(stopped by its timeout of ${formatElapsed(record.input.timeoutMs ?? 0)})`);
  text.push(nextStep(record));
  return {
    id: record.id,
    state: reportState(record.state),
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
    output,
    header,
    text: text.join('\n'),
  };
}

/** `job_status` with no id: one header line per job, oldest first, then `N of <maxJobs> running`. */
export function buildListReport(reports: readonly JobReport[], maxJobs: number): JobListReport {
  const running = reports.filter((report) => report.state === 'running').length;
  const lines = reports.map((report) => report.header);
  if (reports.length === 0) lines.push('no jobs yet; background {"command": "..."} starts one.');
  lines.push(`${running} of ${maxJobs} running`);
  return { jobs: [...reports], running, maxJobs, text: lines.join('\n') };
}

/** The text of `buildListReport`. */
export function listText(reports: readonly JobReport[], maxJobs: number): string {
  return buildListReport(reports, maxJobs).text;
}
