/**
 * The wait before a read (protocol: `read` with `wait`), answered here where the output arrives
 * first: when the job has ended, when a new output line matches the pattern, or when the time is
 * up. One round trip for the runtime, and nothing runs between wake-ups: the job wakes its waiters
 * when output is read (once per event-loop turn) and when its leader exits or it is done.
 */
import { InvalidInputError } from '../../src/protocol/errors.js';
import type { OutputRead, ReadWait, WaitResult } from '../../src/protocol/messages.js';

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
}

/** setTimeout's longest delay: a longer one would fire at once (Node clamps it to 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

function compile(until: NonNullable<ReadWait['until']>): RegExp {
  try {
    return new RegExp(until.source, until.flags.replace(/[gy]/g, ''));
  } catch (error) {
    throw new InvalidInputError(`until is not a valid regular expression: ${(error as Error).message}`);
  }
}

/**
 * Resolves with how the wait ended. Without a pattern: `ended` once the leader has exited and the
 * job drained (the drain is given at most `drainMs` after the exit, as the last output may
 * still be draining), else `timed-out`. With one: `matched` with the first new line that matches.
 */
export async function waitOnOutput(job: WaitableJob, wait: ReadWait, drainMs: number): Promise<WaitResult> {
  const started = Date.now();
  const deadline = started + wait.ms;
  const result = (kind: WaitResult['kind'], line?: string): WaitResult => ({
    kind,
    waitedMs: Date.now() - started,
    ...(line === undefined ? {} : { line }),
  });
  const pattern = wait.until ? compile(wait.until) : null;
  // "From now on" includes the unfinished last line: the cursor is the last complete line.
  let cursor = wait.from ?? job.lineCount - 1;

  let wake: () => void = () => undefined;
  const stop = job.onChange(() => wake());
  try {
    const changed = (until: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(MAX_TIMER_MS, Math.max(0, until - Date.now())));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    if (!pattern) {
      while (!job.ended && Date.now() < deadline) await changed(deadline);
      if (!job.ended) return result('timed-out');
      const drainDeadline = Date.now() + drainMs;
      while (!job.drained && Date.now() < drainDeadline) await changed(drainDeadline);
      return result('ended');
    }
    for (;;) {
      const wasEnded = job.ended;
      const read = job.readLines(cursor);
      const match = read.lines.find((line) => pattern.test(line.text));
      if (match) return result('matched', match.text);
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
