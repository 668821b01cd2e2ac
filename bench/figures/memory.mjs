/**
 * Figure 8, memory: the supervisor's resident set (VmRSS from /proc) idle after start, and while
 * 8 jobs flood output as fast as they can (4 with 80-byte lines, 4 with 16 KiB lines, which the
 * ring cuts at 8 KiB); the peak is VmHWM at the end of the flood.
 */
import { JobRuntime } from '../../dist/src/index.js';
import { goal, group, row } from '../lib/report.mjs';
import { memoryOf, sleep } from '../lib/procs.mjs';

export const id = 'memory';
export const title = 'memory: supervisor RSS idle, and with 8 jobs flooding output';

const MB = 1e6;
const SAMPLE_MS = 100;
const flood = (lineBytes) => `exec yes "$(printf '%${lineBytes - 1}s' '' | tr ' ' x)"`;

async function sampleRss(pid, ms) {
  const samples = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    samples.push(memoryOf(pid).rss / MB);
    await sleep(SAMPLE_MS);
  }
  return samples;
}

export async function run(ctx) {
  const runtime = await JobRuntime.start({ settleMs: 0 });
  try {
    const { supervisorPid } = await runtime.capabilities();
    await sleep(500);
    const idle = await sampleRss(supervisorPid, ctx.runs(2000, 1000));
    const jobs = [];
    for (let i = 0; i < 8; i++) jobs.push(await runtime.background({ command: flood(i < 4 ? 80 : 16 * 1024) }));
    const flooding = await sampleRss(supervisorPid, ctx.runs(15_000, 4000));
    const { hwm } = memoryOf(supervisorPid);
    const states = await Promise.all(jobs.map((job) => runtime.status(job.id, { lines: 1 })));
    const running = states.filter((report) => report.state === 'running').length;
    await Promise.all(jobs.map((job) => runtime.kill(job.id, { signal: 'KILL' })));
    const g = group('', [
      row('supervisor idle (VmRSS)', idle, { unit: 'MB' }),
      row('supervisor, 8 jobs flooding (VmRSS)', flooding, { unit: 'MB', ours: true }),
      row('peak during the flood (VmHWM)', [hwm / MB], { unit: 'MB' }),
    ]);
    // A ratio against idle says nothing here; drop it.
    for (const entry of g.rows) delete entry.ratio;
    return {
      groups: [g],
      goals: [goal('≤ 80 MB flooding (peak, VmHWM)', hwm / MB, '<=', 80, (value) => `${value.toFixed(1)} MB`)],
      notes: [`${running} of 8 flood jobs were still running when sampling ended; RSS sampled every ${SAMPLE_MS} ms; MB = 10^6 bytes`],
    };
  } finally {
    await runtime.close();
  }
}
