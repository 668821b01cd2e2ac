/**
 * A job's output followed as it comes, for the frameworks' process seams (the AI SDK's sandbox,
 * Mastra's process manager): each line passed on with its newline, an unfinished line (a prompt)
 * as it grows. Lines the job's ring dropped before they were read are not seen.
 */
import type { JobReport } from '../reports/report.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { toolPortOf } from '../runtime/tool-port.js';

/** One read's wait for a new line; the read is made again at once after it. */
const FOLLOW_WAIT_MS = 60_000;
/** While an unfinished line is out, a new-line wait would answer at once on it: the reads poll instead. */
const UNFINISHED_POLL_MS = 200;
/** Bytes of output one read returns at most (a longer backlog is read in several). */
const READ_BYTES = 256 * 1024;
/** Any line: the follow's wait answers on the first new one. */
const ANY_LINE = '^';

export const ENDED_STATES: ReadonlySet<string> = new Set(['exited', 'killed', 'failed', 'cancelled', 'lost']);

/** Job `job`'s report without output; undefined once the runtime no longer knows it. */
export function jobReport(runtime: JobRuntime, job: number): JobReport | undefined {
  return toolPortOf(runtime).job(job);
}

/** Resolves once `ready` holds of the job's state (undefined: no such job), checked now and on each of its events. */
export function untilState(runtime: JobRuntime, job: number, ready: (state: string | undefined) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!ready(jobReport(runtime, job)?.state)) return;
      stop();
      resolve();
    };
    const stop = runtime.onJobEvent((event) => {
      if (event.job === job) check();
    });
    check();
  });
}

/**
 * Passes job `job`'s output to `emit` as it comes. Resolves once the job has ended and all of it is
 * read, with its last report; or, when a read fails (the job forgotten, the runtime closed), with
 * the report the runtime still has and the error.
 */
export async function followOutput(
  runtime: JobRuntime,
  job: number,
  emit: (stream: 'stdout' | 'stderr', data: string) => void,
): Promise<{ report: JobReport | null; error: unknown }> {
  let next = -1;
  // Per stream, the text of an unfinished line already passed on.
  const unfinished = new Map<string, string>();
  for (;;) {
    let report: JobReport;
    try {
      // A job waiting for its locks has no output to wait on yet: its start (or end) is an event.
      await untilState(runtime, job, (state) => state !== 'waiting');
      const polling = unfinished.size > 0;
      report = await runtime.status(job, {
        since: next,
        maxBytes: READ_BYTES,
        waitMs: polling ? UNFINISHED_POLL_MS : FOLLOW_WAIT_MS,
        ...(polling ? {} : { until: ANY_LINE }),
      });
    } catch (error) {
      return { report: jobReport(runtime, job) ?? null, error };
    }
    const output = report.output;
    if (output) {
      for (const line of [...output.head, ...output.lines]) {
        const shown = unfinished.get(line.stream) ?? '';
        const fresh = line.text.startsWith(shown) ? line.text.slice(shown.length) : line.text;
        if (line.partial) unfinished.set(line.stream, line.text);
        else unfinished.delete(line.stream);
        const data = line.partial ? fresh : `${fresh}\n`;
        if (data !== '') emit(line.stream, data);
      }
      next = output.next;
    }
    if (ENDED_STATES.has(report.state) && (output === null || (report.waited?.kind === 'ended' && !output.limitedByBytes))) return { report, error: null };
    // No read of a job that has not ended (its supervisor is gone): what comes next is an event.
    if (output === null) await untilState(runtime, job, (state) => state === undefined || ENDED_STATES.has(state));
  }
}
