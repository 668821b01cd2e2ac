/**
 * Figure 9, locks: uncontended acquire + release per second on an in-process LockTable (the
 * async acquire a host uses, and the synchronous tryAcquire), and, once the runtime has its
 * kernel (OFD) lock backend, the handover latency between two runtimes contending for one
 * resource. Until then the handover row says why it is not measured.
 */
import { JobRuntime } from '../../dist/src/index.js';
import { LockTable } from '../../dist/src/locks/index.js';
import { interleave } from '../lib/loop.mjs';
import { goal, group, row, skippedRow } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'locks';
export const title = 'locks: uncontended acquire + release; handover between two runtimes';

const BATCH = 10_000;
const OWNER = { label: 'bench' };
const RESOURCES = ['port:5173'];

/** Handover between two runtimes, if the runtime exposes a lock table with a kernel backend. */
async function handover(ctx) {
  const a = await JobRuntime.start();
  const b = await JobRuntime.start();
  try {
    if (!a.locks || typeof a.locks.acquire !== 'function') {
      return { skipped: 'not measured yet: JobRuntime has no `locks` table (the OFD-lock backend is still being built)' };
    }
    const resource = [`bench:handover-${process.pid}`];
    const once = async () => {
      const held = await a.locks.acquire(OWNER, resource);
      let granted = false;
      const waiting = b.locks.acquire(OWNER, resource, { timeoutMs: 10_000 }).then((lease) => ((granted = true), lease));
      // Give B's request time to reach the kernel lock and block there.
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (granted) throw new Error('the second runtime got the resource while the first held it: the runtimes do not exclude each other yet');
      const start = now();
      await held.release();
      const lease = await waiting;
      const ms = now() - start;
      await lease.release();
      return ms;
    };
    const samples = [];
    for (let i = 0; i < ctx.runs(50, 10); i++) samples.push(await once());
    return { samples };
  } catch (error) {
    return { skipped: `not measured: ${error.message.split('\n')[0]}` };
  } finally {
    await a.close();
    await b.close();
  }
}

export async function run(ctx) {
  const table = new LockTable();
  const cases = [
    {
      name: 'LockTable acquire + release',
      fn: async () => {
        const start = now();
        for (let i = 0; i < BATCH; i++) (await table.acquire(OWNER, RESOURCES)).release();
        return now() - start;
      },
    },
    {
      name: 'LockTable tryAcquire + release',
      fn: async () => {
        const start = now();
        for (let i = 0; i < BATCH; i++) table.tryAcquire(OWNER, RESOURCES).release();
        return now() - start;
      },
    },
  ];
  const results = await interleave({ runs: ctx.runs(30, 10), warmup: 3, cases, progress: ctx.progress(id) });
  const work = { amount: BATCH, unit: 'ops' };
  const uncontended = group(`uncontended, ${BATCH} per sample`, [
    row(cases[0].name, results.get(cases[0].name), { ours: true, work }),
    row(cases[1].name, results.get(cases[1].name), { work }),
  ], 'rate');
  const contended = await handover(ctx);
  const handoverRow = contended.skipped
    ? skippedRow('handover between two runtimes', contended.skipped)
    : row('handover between two runtimes', contended.samples, { ours: true });
  const median = handoverRow.median;
  return {
    groups: [uncontended, group('contended', [handoverRow])],
    goals: [
      goal('≥ 100 000 acquire + release per second (uncontended)', uncontended.rows[0].rate, '>=', 100_000, (value) => `${Math.round(value).toLocaleString('en-US')}/s`),
      goal('handover median ≤ 5 ms', median, '<=', 5, (value) => `${value.toFixed(2)} ms`),
    ],
    notes: [],
  };
}
