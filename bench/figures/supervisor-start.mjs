/**
 * Figure 7, supervisor start: the first call of a fresh runtime, i.e. `JobRuntime.start()` and
 * `capabilities()` (starts the supervisor, waits for its hello), against a bare `node -e 0` from
 * spawn to exit. Also shown: what the first call waits when the runtime was started with
 * `startSupervisor: 'eager'` a moment (200 ms, less than any model's turn) before it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { JobRuntime } from '../../dist/src/index.js';
import { supervisorEnvironment } from '../../dist/src/runtime/supervisor-client.js';
import { supervisorDiagnostics } from '../../dist/src/testing.js';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';
import { setTimeout as sleep } from 'node:timers/promises';

export const id = 'start';
const FLOOR = 'node -e 0';
export const title = 'supervisor start: first call of a fresh runtime';

/** A fresh runtime, timed from `JobRuntime.start()` through `calls(runtime)`; closed untimed. */
function freshRuntime(calls) {
  return async () => {
    const start = now();
    const runtime = await JobRuntime.start();
    try {
      await calls(runtime);
      return now() - start;
    } finally {
      await runtime.close();
    }
  };
}

/** `node -e 0` from spawn to exit, with `env`. */
function bareNode(env) {
  return async () => {
    const start = now();
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore', env });
    await once(child, 'exit');
    return now() - start;
  };
}

export async function run(ctx) {
  const cases = [
    { name: 'fresh runtime.capabilities()', fn: freshRuntime((runtime) => runtime.capabilities()) },
    { name: FLOOR, fn: bareNode(supervisorEnvironment(process.env)) },
    {
      // The start sweep (dead instances' leftovers) runs after the hello: a second request must
      // not wait for it.
      name: 'fresh runtime, capabilities() and a second request',
      fn: freshRuntime(async (runtime) => {
        await runtime.capabilities();
        await supervisorDiagnostics(runtime);
      }),
    },
    {
      name: 'eager runtime, first call 200 ms after start',
      fn: async () => {
        const runtime = await JobRuntime.start({ startSupervisor: 'eager' });
        try {
          await sleep(200);
          const start = now();
          await runtime.capabilities();
          return now() - start;
        } finally {
          await runtime.close();
        }
      },
    },
  ];
  if (process.env.NODE_EXTRA_CA_CERTS) cases.push({ name: 'node -e 0 (with NODE_EXTRA_CA_CERTS)', fn: bareNode(process.env) });
  const results = await interleave({ runs: ctx.runs(20, 5), warmup: 2, cases, progress: ctx.progress(id) });
  const rows = cases.map((entry, index) => row(entry.name, results.get(entry.name), { ours: index === 0 }));
  const g = group('', rows, 'time');
  const notes = [
    `${FLOOR}: the environment the supervisor gets, which is the runtime's less NODE_EXTRA_CA_CERTS (Node parses that bundle at boot; the supervisor opens no TLS connection)`,
  ];
  return { groups: [g], goals: [goal('≤ 1.2× node -e 0', ratioOf(g, FLOOR), '<=', 1.2)], notes };
}
