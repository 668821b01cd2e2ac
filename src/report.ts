/**
 * Reports: what the tools return to the model and what the library returns to its host. The text
 * follows SPEC 3 exactly; the structured fields carry the same facts.
 */
import type { JobRecord, JobState } from './job-record.js';
import type { OutputLine, OutputSnapshot } from './protocol/messages.js';

export type { OutputSnapshot };

export interface JobReport {
  id: number;
  state: JobState;
  exitCode: number | null;
  signal: string | null;
  command: string;
  pid: number | null;
  startedAt: number;
  endedAt: number | null;
  elapsedMs: number;
  /** Every process of the job is gone and reaped (always true for a report of a finished job after kill). */
  cleanedUp: boolean;
  /** Why the job failed or was lost. */
  reason: string | null;
  output: OutputSnapshot | null;
  text: string;
}

/** `m:ss`, or `h:mm:ss` past an hour. */
export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
}

function stateWord(record: JobRecord): string {
  switch (record.state) {
    case 'exited':
      return `exited ${record.exitCode ?? '?'}`;
    case 'killed':
      return `killed ${record.signal ?? '?'}`;
    case 'starting':
      return 'running';
    default:
      return record.state;
  }
}

export function headerLine(record: JobRecord, now = Date.now()): string {
  const elapsed = formatElapsed((record.endedAt ?? now) - record.startedAt);
  return `job ${record.id} ${stateWord(record)} ${elapsed} ${record.command}`;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

function outputLine(line: OutputLine): string {
  const mark = line.stream === 'stderr' ? '! ' : '> ';
  const cut = line.cutBytes > 0 ? ` [${plural(line.cutBytes, 'byte')} cut]` : '';
  return `${mark}${line.text}${cut}`;
}

function outputSection(record: JobRecord, output: OutputSnapshot): string[] {
  const lines: string[] = [];
  const shownFrom = output.lines[0]?.seq ?? output.next + 1;
  if (output.head.length > 0) {
    lines.push(`first ${plural(output.head.length, 'line')}:`);
    for (const line of output.head) lines.push(outputLine(line));
    lines.push(`last lines:`);
  }
  if (output.earlier > 0) {
    const kept = output.earlier - output.dropped;
    const gone = output.dropped > 0 ? `; the oldest ${plural(output.dropped, 'line')} are gone (only the last lines are kept)` : '';
    const read = kept > 0 ? `; job_status {"id": ${record.id}, "lines": ${Math.min(kept + output.lines.length, 2000)}} shows more` : '';
    lines.push(`(${plural(output.earlier, 'earlier line')}${gone}${read})`);
  }
  for (const line of output.lines) lines.push(outputLine(line));
  if (output.limitedByBytes) {
    lines.push(`(output cut to the byte limit of this read; read on with job_status {"id": ${record.id}, "since": ${output.next}})`);
  }
  if (output.truncatedLines > 0 && output.lines.some((line) => line.cutBytes > 0)) {
    lines.push(`(lines longer than the line limit are cut; the cut is shown at the end of each)`);
  }
  void shownFrom;
  return lines;
}

function nextStep(record: JobRecord): string {
  const id = `{"id": ${record.id}}`;
  switch (record.state) {
    case 'running':
    case 'starting':
      return `job_status ${id} reads more; job_kill ${id} stops it.`;
    case 'failed':
      return `the job did not start: ${record.reason ?? 'unknown reason'}. Fix the command or its directory and call background again.`;
    case 'lost':
      return `job ${record.id} is lost: ${record.reason ?? 'its supervisor died'}. Start it again with background if it is still needed.`;
    default:
      return record.cleanedUp
        ? `job ${record.id} has ended; job_status ${id} still reads its output.`
        : `job ${record.id} has ended; processes it left behind are being stopped. job_status ${id} reads its output.`;
  }
}

export function buildReport(record: JobRecord, output: OutputSnapshot | null, _context: { maxJobs: number }, now = Date.now()): JobReport {
  const text = [headerLine(record, now)];
  if (output) text.push(...outputSection(record, output));
  text.push(nextStep(record));
  return {
    id: record.id,
    state: record.state === 'starting' ? 'running' : record.state,
    exitCode: record.exitCode,
    signal: record.signal,
    command: record.command,
    pid: record.pid,
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    elapsedMs: (record.endedAt ?? now) - record.startedAt,
    cleanedUp: record.cleanedUp,
    reason: record.reason,
    output,
    text: text.join('\n'),
  };
}

/** `job_status` with no id: one header per job, then `N of 8 running`. */
export function listText(reports: readonly JobReport[], maxJobs: number): string {
  const running = reports.filter((report) => report.state === 'running').length;
  const lines = reports.map((report) => report.text.split('\n')[0]!);
  if (reports.length === 0) lines.push('no jobs yet; background {"command": "..."} starts one.');
  lines.push(`${running} of ${maxJobs} running`);
  return lines.join('\n');
}
