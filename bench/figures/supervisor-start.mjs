/**
 * Figure 7, supervisor start: the first call of a fresh runtime minus the spawn, i.e.
 * `capabilities()` on a fresh runtime (starts the supervisor, waits for its hello), against a bare
 * `node -e 0` from spawn to exit.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { JobRuntime } from '../../dist/src/index.js';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'start';
export const title = 'supervisor start: first call of a fresh runtime, minus the spawn';

export async function run(ctx) {
  const cases = [
    {
      name: 'fresh runtime.capabilities()',
      fn: async () => {
        const runtime = await JobRuntime.start();
        try {
          const start = now();
          await runtime.capabilities();
          return now() - start;
        } finally {
          await runtime.close();
        }
      },
    },
    {
      name: 'node -e 0',
      fn: async () => {
        const start = now();
        const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
        await once(child, 'exit');
        return now() - start;
      },
    },
  ];
  const results = await interleave({ runs: ctx.runs(20, 5), warmup: 2, cases, progress: ctx.progress(id) });
  const rows = cases.map((entry, index) => row(entry.name, results.get(entry.name), { ours: index === 0 }));
  const g = group('', rows, 'time');
  return { groups: [g], goals: [goal('≤ 1.2× node -e 0', ratioOf(g, 'node -e 0'), '<=', 1.2)], notes: [] };
}
