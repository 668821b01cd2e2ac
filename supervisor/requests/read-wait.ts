/**
 * The wait before a read (protocol: `read` with `wait`), answered here where the output arrives
 * first: when the job has ended, when a new output line matches the pattern, or when the time is
 * up. One round trip for the runtime, and nothing runs between wake-ups: the job wakes its waiters
 * when output is read (once per event-loop turn) and when its leader exits or it is done.
 *
 * The pattern comes from a model: it is compiled by the linear-time engine of
 * src/protocol/pattern.ts, and the scan lets the event loop run every MATCH_SLICE_MS of matching,
 * so one wait never holds up another request, another job's output or a kill.
 */
import { InvalidInputError } from '../../src/protocol/errors.js';
import type { OutputRead, ReadWait, WaitResult } from '../../src/protocol/messages.js';
import { compileLinePattern, type LinePattern, type PatternProblem, type PatternSpec } from '../../src/protocol/pattern.js';

/** What a wait needs of a job. */
export interface WaitableJob {
  readonly id: number;
  /** The leader has exited (its state is final). */
  readonly ended: boolean;
  /** Every process is gone and the last output is read: nothing more will come. */
  readonly drained: boolean;
  /** Completed lines so far. */
  readonly lineCount: number;
  readLines(since: number): OutputRead;
  /** Calls `wake` after each change (new output, exit, completion) until the returned function is called. */
  onChange(wake: () => void): () => void;
  /** A check, bounded in cost, of whether a process of the job listens on TCP `port`. */
  portCheck(port: number): () => boolean;
}

/**
 * How often a wait with a port looks for the listener: nothing signals a listen (a server that
 * prints nothing is the case this is for), so it is polled, only while such a wait is pending.
 * A look costs about 2 ms when the machine has TCP sockets (the kernel walks its established hash
 * to list the listeners: platform/ports.ts), so 100 ms keeps a pending wait near 2% of a core.
 */
export const PORT_POLL_MS = 100;

/** setTimeout's longest delay: a longer one would fire at once (Node clamps it to 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Matching time after which a scan lets the event loop run before it goes on. */
const MATCH_SLICE_MS = 10;

/** Why the supervisor refuses a pattern in `field` (the runtime checked it first: only a bare caller sees this). */
function refusal(problem: PatternProblem, field: string): string {
  switch (problem.kind) {
    case 'shape':
      return `${field} must be 1 to ${problem.maxChars} characters`;
    case 'unsupported':
      return `${field} is not a pattern RE2 runs: it uses a ${problem.construct} ${problem.text}`;
    case 'flags':
      return `${field} has flags RE2 does not run: ${JSON.stringify(problem.flags)}`;
    case 'syntax':
      return `${field} is not a valid regular expression: ${problem.reason}`;
    case 'too-complex':
      return `${field} compiles to ${problem.instructions} instructions, more than ${problem.max}`;
  }
}

/** The pattern of request field `field` (`until`, `filter`), compiled; else InvalidInputError. */
export function compilePattern(spec: PatternSpec, field: string): LinePattern {
  const compiled = compileLinePattern(spec);
  if (!compiled.ok) throw new InvalidInputError(refusal(compiled.problem, field));
  return compiled.pattern;
}

/** Lets the event loop run (requests, other jobs' output) before the caller goes on. */
function yieldToEvents(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Resolves with how the wait ended. Without a pattern: `ended` once the leader has exited and the
 * job drained (the drain is given at most `drainMs` after the exit, as the last output may
 * still be draining), else `timed-out`. With one: `matched` with the first new line that matches.
 * With a port: `listening` as soon as a process of the job listens on it (checked at once, then
 * every PORT_POLL_MS and on each change).
 */
export async function waitOnOutput(job: WaitableJob, wait: ReadWait, drainMs: number): Promise<WaitResult> {
  const started = Date.now();
  const deadline = started + wait.ms;
  const result = (kind: WaitResult['kind'], line?: string): WaitResult => ({
    kind,
    waitedMs: Date.now() - started,
    ...(line === undefined ? {} : { line }),
  });
  const pattern = wait.until ? compilePattern(wait.until, 'until') : null;
  const listens = wait.port === undefined ? () => false : job.portCheck(wait.port);
  // Without a port the timer is the deadline; with one, also the next look for the listener.
  const nextTimer = (until: number) => (wait.port === undefined ? until : Math.min(until, Date.now() + PORT_POLL_MS));
  // "From now on" includes the unfinished last line: the cursor is the last complete line.
  let cursor = wait.from ?? job.lineCount - 1;

  let wake: () => void = () => undefined;
  const stop = job.onChange(() => wake());
  try {
    const changed = (until: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(MAX_TIMER_MS, Math.max(0, nextTimer(until) - Date.now())));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    if (!pattern) {
      while (!job.ended && Date.now() < deadline) {
        if (listens()) return result('listening');
        await changed(deadline);
      }
      if (!job.ended) return result(listens() ? 'listening' : 'timed-out');
      const drainDeadline = Date.now() + drainMs;
      while (!job.drained && Date.now() < drainDeadline) await changed(drainDeadline);
      return result('ended');
    }
    for (;;) {
      if (listens()) return result('listening');
      const wasEnded = job.ended;
      const read = job.readLines(cursor);
      // One line's test is the unit of work (bounded by the line's length and the pattern's
      // size); between slices of them the event loop runs, and the deadline is kept.
      let slice = Date.now();
      for (const line of read.lines) {
        if (pattern.test(line.text)) return result('matched', line.text);
        if (Date.now() - slice < MATCH_SLICE_MS) continue;
        await yieldToEvents();
        if (Date.now() >= deadline) return result('timed-out');
        slice = Date.now();
      }
      const advanced = read.next > cursor;
      cursor = read.next;
      if (wasEnded && job.drained) return result('ended');
      if (Date.now() >= deadline) return result('timed-out');
      if (read.limitedByBytes && advanced) {
        // A scan cut by its byte bound reads on after one turn of the event loop, so a long
        // backlog never holds up the other jobs' output. One that did not advance (an unfinished
        // line longer than the bound, which only grows) waits for something new instead.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      await changed(deadline);
    }
  } finally {
    stop();
  }
}
