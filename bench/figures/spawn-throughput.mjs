/**
 * Figure 2, spawn throughput: N short jobs (`true`) from start to done, with up to 64 in flight,
 * against child_process.spawn one after another and with the same 64 in flight. "Done" is the
 * job's cleanup reported (every process reaped, output drained) for ours, 'close' (exit and
 * stdio closed) for child_process.
 */
import { JobRuntime } from '../../dist/src/index.js';
import { childTrue as spawnTrue } from '../lib/child-spawn.mjs';
import { JobEvents } from '../lib/job-events.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'throughput';
export const title = 'spawn throughput: short jobs (`true`) start to done';

const IN_FLIGHT = 64;

async function pool(total, width, task) {
  let next = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      await task();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, total) }, worker));
}

export async function run(ctx) {
  const jobs = ctx.runs(500, 100);
  const runtime = await JobRuntime.start({ settleMs: 0, maxJobs: IN_FLIGHT });
  const events = new JobEvents(runtime);
  let failed = 0;
  const runtimeJob = async () => {
    const report = await runtime.background({ command: 'true' });
    if (report.state === 'failed') failed++;
    await events.wait('cleaned-up', report.id);
    events.forget(report.id);
  };
  try {
    await runtime.capabilities();
    const timed = (fn) => async () => {
      const start = now();
      await fn();
      return now() - start;
    };
    const cases = [
      { name: `runtime, ${IN_FLIGHT} in flight`, fn: timed(() => pool(jobs, IN_FLIGHT, runtimeJob)) },
      { name: 'child_process.spawn one after another', fn: timed(() => pool(jobs, 1, spawnTrue)) },
      { name: `child_process.spawn, ${IN_FLIGHT} in flight`, fn: timed(() => pool(jobs, IN_FLIGHT, spawnTrue)) },
    ];
    // Warm-up: a short batch of each.
    await pool(50, IN_FLIGHT, runtimeJob);
    await pool(50, 8, spawnTrue);
    const results = await interleave({ runs: ctx.runs(5, 2), cases, progress: ctx.progress(id) });
    const rows = cases.map((entry, index) => row(entry.name, results.get(entry.name), { ours: index === 0, work: { amount: jobs, unit: 'jobs' } }));
    const g = group(`${jobs} jobs per run`, rows, 'rate');
    const notes = failed ? [`${failed} jobs failed to start`] : [];
    return {
      groups: [g],
      goals: [
        goal('≥ 2× child_process.spawn (one after another)', ratioOf(g, 'child_process.spawn one after another'), '>=', 2),
        goal(`≥ 1× child_process.spawn (${IN_FLIGHT} in flight)`, ratioOf(g, `child_process.spawn, ${IN_FLIGHT} in flight`), '>=', 1),
      ],
      notes,
    };
  } finally {
    await runtime.close();
  }
}
