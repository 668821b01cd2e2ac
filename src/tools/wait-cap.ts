/**
 * A call's `wait` under its context's `maxWaitMs` (a host whose client gives up sooner than a
 * wait may ask): the wait is cut to the cap, and when it then runs out, the report says it was
 * cut and names the job_status call that waits on for the rest (src/wording/, waitCut).
 */
import { reportText, type JobReport } from '../reports/report.js';
import { UNTIL_WAIT_MS } from '../runtime/options.js';
import { stillWaiting } from '../wording/index.js';
import { seconds } from './toolkit.js';

/** The wait to run (ms), and the wait asked when it was cut. */
export interface CappedWait {
  waitMs: number;
  askedMs?: number;
}

/**
 * The wait a call asks for, in ms: its `wait`; with none, UNTIL_WAIT_MS when it names a line or a
 * port to wait for (the runtime's default, made here so that the host's cap applies to it too).
 */
export function askedWaitMs(wait: number | undefined, until: unknown, untilPort: unknown): number | undefined {
  if (wait !== undefined) return seconds(wait);
  return until !== undefined || untilPort !== undefined ? UNTIL_WAIT_MS : undefined;
}

export function capWait(waitMs: number, maxWaitMs: number | undefined): CappedWait {
  return maxWaitMs !== undefined && waitMs > maxWaitMs ? { waitMs: maxWaitMs, askedMs: waitMs } : { waitMs };
}

/** `report` as it reads after a wait that was cut (`askedMs` set) and ran out; as it is otherwise. */
export function afterCut(report: JobReport, wait: CappedWait | undefined): JobReport {
  if (wait?.askedMs === undefined || report.waited?.kind !== 'timed-out') return report;
  const cut = { ...report, waited: { ...report.waited, cut: { askedMs: wait.askedMs, capMs: wait.waitMs } } };
  return { ...cut, text: reportText(cut) };
}

/** What a call that is still waiting says of itself (an MCP progress notification's message). */
export function waitingText(tool: string, id: unknown, elapsedMs: number): string {
  return stillWaiting(tool, id, elapsedMs);
}
