/** A job report with made-up but consistent fields (job 0, running for 1:02), for tests of what the CLI shows. */
import type { JobReport } from '../../src/index.js';

export function report(fields: Partial<JobReport>): JobReport {
  return {
    id: 0,
    state: 'running',
    exitCode: null,
    signal: null,
    command: 'npm run dev',
    pid: 100,
    startedAt: 0,
    endedAt: null,
    elapsedMs: 62_000,
    cleanedUp: false,
    reason: null,
    output: null,
    since: null,
    waited: null,
    wants: [],
    timedOutAfterMs: null,
    stats: null,
    header: 'job 0 running 1:02 npm run dev',
    text: 'job 0 running 1:02 npm run dev\n...',
    ...fields,
  } as JobReport;
}
