/**
 * Issue 27's hot path, as a host calls it: the `background` tool (its text answer) and
 * runtime.background with BUSY other jobs running, as in a real session, against
 * child_process.spawn of the same command; then short jobs started through the tool one after
 * another, each to its cleanup, against child_process.spawn one after another.
 */
import { createTools, JobRuntime } from '../../dist/src/index.js';
import { backgroundRunningMs, childRunningMs, childTrue } from '../lib/child-spawn.mjs';
import { JobEvents } from '../lib/job-events.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'host-calls';
export const title = 'through the public API: tool call to job running, and short jobs one after another';

/** Jobs that keep running beside the measured one, as a session's dev server and watchers do. */
const BUSY = 8;
const COMMAND = 'exec sleep 1000';

export async function run(ctx) {
  const runtime = await JobRuntime.start({ settleMs: 0, maxJobs: 64 });
  // The user said "always" once: the calls measured are the ones a session makes from then on.
  const tools = createTools(runtime, { approve: async () => 'always' });
  const events = new JobEvents(runtime);
  const notes = [];
  let notRunning = 0;
  try {
    for (let i = 0; i < BUSY; i++) await runtime.background({ command: COMMAND });
    const lastId = () => Math.max(...runtime.list().map((job) => job.id));
    const latency = [
      {
        name: 'background tool (text answer)',
        fn: async () => {
          const start = now();
          const result = await tools.background.call({ command: COMMAND });
          const ms = now() - start;
          if (result.isError || !/running/.test(result.text)) notRunning++;
          // Through the tool too: a job the model saw end is no notice in the next answer.
          await tools.job_kill.call({ id: lastId(), signal: 'KILL' });
          return ms;
        },
      },
      { name: 'runtime.background', fn: () => backgroundRunningMs(runtime, COMMAND, () => notRunning++) },
      { name: 'child_process.spawn', fn: () => childRunningMs(COMMAND) },
    ];
    const latencyResults = await interleave({ runs: ctx.runs(150, 20), warmup: ctx.runs(15, 3), cases: latency, progress: ctx.progress(`${id} latency`) });
    const latencyGroup = group(`call to running, ${BUSY} other jobs running`, latency.map((entry, index) => row(entry.name, latencyResults.get(entry.name), { ours: index === 0 })), 'time');

    const jobs = ctx.runs(400, 50);
    const toolJob = async () => {
      await tools.background.call({ command: 'true' });
      await events.wait('cleaned-up', lastId());
    };
    const sequentially = (task) => async () => {
      const start = now();
      for (let i = 0; i < jobs; i++) await task();
      return now() - start;
    };
    const throughput = [
      { name: 'background tool, one after another', fn: sequentially(toolJob) },
      { name: 'child_process.spawn one after another', fn: sequentially(childTrue) },
    ];
    const throughputResults = await interleave({ runs: ctx.runs(3, 1), cases: throughput, progress: ctx.progress(`${id} throughput`) });
    const throughputGroup = group(
      `${jobs} short jobs start to done, ${BUSY} other jobs running`,
      throughput.map((entry, index) => row(entry.name, throughputResults.get(entry.name), { ours: index === 0, work: { amount: jobs, unit: 'jobs' } })),
      'rate',
    );
    if (notRunning > 0) notes.push(`${notRunning} calls did not report the job running`);
    notes.push('the tool call includes its input checks, the spawn, and the report text the model reads');
    return {
      groups: [latencyGroup, throughputGroup],
      goals: [
        goal('tool call to running ≤ 0.7× child_process.spawn', ratioOf(latencyGroup, 'child_process.spawn'), '<=', 0.7),
        goal('≥ 2× child_process.spawn one after another', ratioOf(throughputGroup, 'child_process.spawn one after another'), '>=', 2),
      ],
      notes,
    };
  } finally {
    await runtime.close();
  }
}
