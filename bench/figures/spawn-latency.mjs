/**
 * Figure 1, spawn latency: from the call to a running job (settle window off), against
 * child_process.spawn and execa of the same `sh -c` command to their 'spawn' event, and the addon's
 * own spawn called directly (the floor) in a process of its own. Each sample's process is killed
 * and reaped, untimed, before the next.
 */
import { once } from 'node:events';
import { execa } from 'execa';
import { JobRuntime } from '../../dist/src/index.js';
import { backgroundRunningMs, childRunningMs } from '../lib/child-spawn.mjs';
import { AddonHarness, envEntries } from '../lib/harness.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row, skippedRow } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'spawn';
export const title = 'spawn latency: call to job running (settle window off)';

// Keeps running, so "running" is what we time, not an early exit.
const COMMAND = 'exec sleep 1000';

export async function run(ctx) {
  const runtime = await JobRuntime.start({ settleMs: 0, maxJobs: 64 });
  const harness = await AddonHarness.start();
  const env = envEntries(process.env);
  const notes = [];
  let notRunning = 0;
  try {
    await runtime.capabilities();
    const cases = [
      { name: 'runtime.background', fn: () => backgroundRunningMs(runtime, COMMAND, () => notRunning++) },
      {
        name: 'child_process.spawn',
        fn: () => childRunningMs(COMMAND),
      },
      {
        name: 'execa',
        fn: async () => {
          const start = now();
          const child = execa('/bin/sh', ['-c', COMMAND]);
          await once(child, 'spawn');
          const ms = now() - start;
          child.kill('SIGKILL');
          await child.catch(() => {});
          return ms;
        },
      },
      { name: 'addon spawn (floor)', fn: async () => (await harness.request({ op: 'spawn', cgroup: false, command: COMMAND, env })).ms },
    ];
    if (harness.cgroup) {
      cases.push({
        name: 'addon mkdir cgroup + spawn into it',
        fn: async () => (await harness.request({ op: 'spawn', cgroup: true, command: COMMAND, env })).ms,
      });
    }
    const results = await interleave({ runs: ctx.runs(200, 30), warmup: ctx.runs(20, 5), cases, progress: ctx.progress(id) });
    const rows = cases.map((entry) => row(entry.name, results.get(entry.name), { ours: entry.name === 'runtime.background' }));
    if (!harness.cgroup) rows.push(skippedRow('addon mkdir cgroup + spawn into it', harness.hello.cgroupReason));
    const g = group('', rows, 'time');
    if (notRunning > 0) notes.push(`${notRunning} background calls did not report the job running`);
    notes.push('runtime.background includes its input checks, the spawn request and the report built from its reply (settle window off: no status read)');
    return {
      groups: [g],
      goals: [
        goal('≤ 0.5× child_process.spawn', ratioOf(g, 'child_process.spawn'), '<=', 0.5),
        goal('≤ 1.5× the addon floor', ratioOf(g, 'addon spawn (floor)'), '<=', 1.5),
      ],
      notes,
    };
  } finally {
    await harness.close();
    await runtime.close();
  }
}
