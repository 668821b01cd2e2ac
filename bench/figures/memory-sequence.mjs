/**
 * Memory over many jobs in sequence (issue 12, item 13): the supervisor's and the runtime's
 * resident set after a warm-up, and after 10 000 short jobs (each started, waited for and read),
 * with the descriptors the supervisor holds. Flat means nothing accumulates per job; the goal
 * allows for the garbage collector's own slack. The runtime is this process, whose V8 flags are
 * the host's: its resident set is shown, and its live heap after a full collection (npm run bench
 * runs node with --expose-gc) is what must stay flat.
 */
import fs from 'node:fs';
import { JobRuntime } from '../../dist/src/index.js';
import { goal, group, row } from '../lib/report.mjs';
import { memoryOf } from '../lib/procs.mjs';

export const id = 'memory-sequence';
export const title = 'memory: supervisor and runtime RSS over many short jobs in sequence';

const MB = 1e6;
const WARM_UP_JOBS = 200;

/** Bytes of live objects in this process's heap, after a full collection when one can be asked for. */
function liveHeap() {
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

async function oneJob(runtime) {
  const job = await runtime.background({ command: 'true' });
  await runtime.status(job.id, { waitMs: 10_000, lines: 1 });
}

export async function run(ctx) {
  const jobs = ctx.runs(10_000, 600);
  const runtime = await JobRuntime.start({ settleMs: 0, keepFinished: 50 });
  try {
    const { supervisorPid } = await runtime.capabilities();
    const fds = () => fs.readdirSync(`/proc/${supervisorPid}/fd`).length;
    for (let i = 0; i < WARM_UP_JOBS; i++) await oneJob(runtime);
    const warm = { supervisor: memoryOf(supervisorPid).rss, runtime: memoryOf(process.pid).rss, heap: liveHeap(), fds: fds() };
    const supervisorSamples = [];
    const runtimeSamples = [];
    const every = Math.max(1, Math.floor(jobs / 20));
    for (let i = 0; i < jobs; i++) {
      await oneJob(runtime);
      if (i % every === 0) {
        supervisorSamples.push(memoryOf(supervisorPid).rss / MB);
        runtimeSamples.push(memoryOf(process.pid).rss / MB);
      }
    }
    const end = { supervisor: memoryOf(supervisorPid).rss, runtime: memoryOf(process.pid).rss, heap: liveHeap(), fds: fds() };
    const g = group('', [
      row(`supervisor during ${jobs} jobs (VmRSS, sampled)`, supervisorSamples, { unit: 'MB', ours: true }),
      row(`runtime during ${jobs} jobs (VmRSS, sampled)`, runtimeSamples, { unit: 'MB' }),
    ]);
    for (const entry of g.rows) delete entry.ratio;
    const growth = (key) => end[key] / warm[key];
    return {
      groups: [g],
      goals: [
        goal('supervisor RSS end / after warm-up ≤ 1.25', growth('supervisor'), '<=', 1.25, (value) => `${value.toFixed(2)}×`),
        goal('runtime live heap end / after warm-up ≤ 1.25', growth('heap'), '<=', 1.25, (value) => `${value.toFixed(2)}×`),
        goal('supervisor descriptors unchanged', end.fds - warm.fds, '<=', 0, (value) => `${value >= 0 ? '+' : ''}${value}`),
      ],
      notes: [
        `after ${WARM_UP_JOBS} warm-up jobs: supervisor ${(warm.supervisor / MB).toFixed(1)} MB, runtime ${(warm.runtime / MB).toFixed(1)} MB ` +
          `(live heap ${(warm.heap / MB).toFixed(1)} MB), ${warm.fds} fds; after ${jobs} more: supervisor ${(end.supervisor / MB).toFixed(1)} MB, ` +
          `runtime ${(end.runtime / MB).toFixed(1)} MB (live heap ${(end.heap / MB).toFixed(1)} MB), ${end.fds} fds`,
        globalThis.gc ? 'live heap measured after a full collection' : 'no --expose-gc: live heap includes garbage',
      ],
    };
  } finally {
    await runtime.close();
  }
}
