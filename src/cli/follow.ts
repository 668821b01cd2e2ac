/**
 * A job's output as `logs` shows it: every line still kept, in order (the first lines kept from
 * the start, then a note for the lines that fell out of the ring, then the rest), and, when
 * following (`logs -f`), each new line as it comes until the job has ended or the signal fires.
 *
 * Following costs one round trip per wait: a cursor read (`since`) with a wait that the supervisor
 * answers as soon as a new line is there (`until` matching any line). An unfinished last line is
 * shown as it stands and redrawn as it changes: the next wait is for a line other than it (a
 * pattern, otherThan, that tells lines apart by their first characters), and is bounded by
 * PARTIAL_WAIT_MS for what that pattern cannot see: the line ending with no change, or changing
 * only past the characters it compares.
 * A job still waiting for its locks has no output to wait on yet: its state is re-checked locally
 * (no round trip) every WAITING_CHECK_MS until it starts.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { OutputLine } from '../protocol/messages.js';
import type { JobReport } from '../reports/report.js';
import { patternProblem } from '../runtime/input-checks.js';
import type { JobRuntime, StatusOptions } from '../runtime/job-runtime.js';
import { unlessAborted } from '../tools/context.js';
import type { Palette } from './colour.js';

/** The longest a follower's wait lasts before it asks again (a wait costs nothing while it lasts). */
export const WAIT_MS = 30_000;
/** A wait while an unfinished line is shown: bounded, so the line's newline shows within this. */
export const PARTIAL_WAIT_MS = 2_000;
/** How often a job waiting for its locks is looked at (in this process: no round trip). */
export const WAITING_CHECK_MS = 250;
/** Bytes of output per read. */
const READ_BYTES = 256 * 1024;
/** Matches every line: a wait with it ends at the first new line. */
const ANY_LINE = '^';
/** The most characters of an unfinished line that otherThan compares (fewer if the pattern would be too big). */
const COMPARED_CHARS = 48;

/** Where the lines go. */
export interface OutputSink {
  /** A finished line, in order; at the end, an unfinished last line as it stands. */
  line(line: OutputLine): void;
  /** The unfinished last line as it stands now (following only), or null once it is gone from view. */
  partial(line: OutputLine | null): void;
  /** `count` lines here are no longer kept (only the newest lines of a job are). */
  gap(count: number): void;
}

export type FollowRuntime = Pick<JobRuntime, 'status' | 'list'>;

export interface ReadOptions {
  runtime: FollowRuntime;
  id: number;
  sink: OutputSink;
  /** Keep reading as the job writes, until it has ended. Default: print what is kept and return. */
  follow?: boolean;
  /** Stops at once (the pending wait is left to run out on its own). */
  signal?: AbortSignal;
}

/** One character as a literal of RE2's syntax (the waits' patterns are RE2), in or out of a class. */
function literal(char: string): string {
  return /[\p{L}\p{N} ]/u.test(char) ? char : `\\x{${char.codePointAt(0)!.toString(16)}}`;
}

/**
 * An `until` pattern (RE2: no lookahead) that matches every line except `text` itself: a line that
 * ends before it, or differs from it at one of its first `compared` characters, or (when all of
 * `text` is compared) goes on after it. `^(?:$|[^a]|a(?:$|[^b]|b.))` is the one for `ab`.
 */
function excluding(text: string, compared: number): string {
  const chars = [...text].slice(0, compared);
  const whole = chars.length === [...text].length;
  let rest = whole ? '.' : '';
  for (let i = chars.length - 1; i >= 0; i--) {
    const c = literal(chars[i]!);
    rest = rest === '' ? `(?:$|[^${c}])` : `(?:$|[^${c}]|${c}${rest})`;
  }
  return `^${rest}`;
}

/** A wait pattern for any line but the unfinished one showing `text`: as many of its characters as the pattern limits allow. */
export function otherThan(text: string): string {
  for (let compared = COMPARED_CHARS; compared >= 1; compared = Math.floor(compared / 2)) {
    const source = excluding(text, compared);
    if (patternProblem(source) === null) return source;
  }
  return ANY_LINE; // never reached: one compared character is a small pattern
}

function sameLine(a: OutputLine | null, b: OutputLine | null): boolean {
  return a === b || (a !== null && b !== null && a.seq === b.seq && a.text === b.text && a.stream === b.stream);
}

/** The job can still write: it runs, or its last processes are still being stopped. */
function mayWrite(job: JobReport): boolean {
  if (job.state === 'running') return true;
  return job.state !== 'waiting' && job.state !== 'failed' && job.state !== 'lost' && !job.cleanedUp;
}

function listed(runtime: FollowRuntime, id: number): JobReport | undefined {
  return runtime.list().find((job) => job.id === id);
}

/**
 * Writes the job's output to `sink`: what is kept, then (following) what comes. Resolves with the
 * last report read (when following, the job's final one), or null when the signal stopped it.
 * Throws the runtime's error for a job that does not exist.
 */
export async function readJobOutput(options: ReadOptions): Promise<JobReport | null> {
  const { runtime, id, sink, signal } = options;
  const follow = options.follow === true;
  const stopped = async () => null;
  let since = -1;
  let shown: OutputLine | null = null;
  for (;;) {
    const job = listed(runtime, id);
    if (follow && job?.state === 'waiting' && !signal?.aborted) {
      if (!(await pause(signal))) return null;
      continue;
    }
    const waits = follow && !signal?.aborted && job !== undefined && mayWrite(job);
    const read: StatusOptions = { since, maxBytes: READ_BYTES };
    if (waits) {
      read.waitMs = shown ? PARTIAL_WAIT_MS : WAIT_MS;
      read.until = shown ? otherThan(shown.text) : ANY_LINE;
    }
    const report = waits ? await unlessAborted<JobReport | null>(runtime.status(id, read), signal, stopped) : await runtime.status(id, read);
    if (report === null) return null;
    const output = report.output;
    // Stopped before it began (Ctrl-C came with the command): what is kept, as without follow.
    const ends = !follow || !mayWrite(report) || signal?.aborted === true;
    if (!output) {
      if (ends) return report; // failed, lost, or forgotten by a supervisor that is gone: nothing to read
      // Running but not yet in the supervisor (starting): nothing to wait on for a moment.
      if (!(await pause(signal))) return null;
      continue;
    }
    const unfinished = output.lines.find((line) => line.partial === true) ?? null;
    const finished = output.lines.filter((line) => line.partial === undefined);
    const gap = output.dropped - output.head.length;
    const news = output.head.length > 0 || gap > 0 || finished.length > 0;
    if (shown && (news || !sameLine(shown, unfinished) || ends)) {
      sink.partial(null);
      shown = null;
    }
    for (const line of output.head) sink.line(line);
    if (gap > 0) sink.gap(gap);
    for (const line of finished) sink.line(line);
    since = output.next;
    if (output.limitedByBytes) continue; // more is there already
    if (ends) {
      if (unfinished) sink.line(unfinished);
      return report;
    }
    if (unfinished && !shown) {
      sink.partial(unfinished);
      shown = unfinished;
    }
    // A job that has ended but is not yet known to be cleaned up answers its waits at once: look
    // again in a moment rather than ask again and again.
    if (!news && report.state !== 'running' && !(await pause(signal))) return null;
  }
}

/** Waits WAITING_CHECK_MS; false when the signal fired first. */
function pause(signal: AbortSignal | undefined): Promise<boolean> {
  return delay(WAITING_CHECK_MS, true, signal ? { signal } : {}).catch(() => false);
}

/**
 * A sink writing to terminals or files: finished lines to `out`, stderr lines to `err` (as `docker
 * logs` does), coloured by `palette`; an unfinished line is shown, and redrawn, only where it can be
 * (`redraw`: `out` is a terminal).
 */
export function textSink(options: { out: NodeJS.WritableStream; err: NodeJS.WritableStream; palette: Palette; redraw: boolean }): OutputSink {
  const { out, err, palette, redraw } = options;
  const streamOf = (line: OutputLine) => (line.stream === 'stderr' ? err : out);
  const paint = (line: OutputLine) => (line.stream === 'stderr' ? palette.stderr(line.text) : line.text);
  let drawn: OutputLine | null = null;
  return {
    line(line) {
      streamOf(line).write(`${paint(line)}\n`);
    },
    partial(line) {
      if (!redraw) return;
      if (drawn) streamOf(drawn).write('\r\x1b[K');
      drawn = line;
      if (line) streamOf(line).write(paint(line));
    },
    gap(count) {
      out.write(`${palette.dim(`(${count} ${count === 1 ? 'line is' : 'lines are'} gone here: only the newest lines of a job's output are kept)`)}\n`);
    },
  };
}
