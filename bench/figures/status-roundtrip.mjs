/**
 * Figure 6, status round trip: runtime.status of a running job with 2000 lines in its ring, the
 * default tail (50 lines) and all 2000 lines; against a raw msgpack round trip over the same kind
 * of channel (an inherited socket, the same codec) to an echo process that answers with a value
 * the same size as the supervisor's reply.
 */
import { JobRuntime } from '../../dist/src/index.js';
import { encodeFrame } from '../../dist/src/protocol/codec.js';
import { Echo } from '../lib/echo.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'status';
export const title = 'status round trip: runtime.status of a job with 2000 lines';

const LINES = 2000;
const COMMAND = `seq -f 'line %g of a job that prints about sixty bytes per line of output' 1 ${LINES}; exec sleep 1000`;

export async function run(ctx) {
  const runtime = await JobRuntime.start({ settleMs: 0 });
  const echo = new Echo();
  try {
    const job = await runtime.background({ command: COMMAND });
    // Wait until the last line is in the ring.
    for (let tries = 0; ; tries++) {
      const last = (await runtime.status(job.id, { lines: 1 })).output?.lines.at(-1)?.text ?? '';
      if (last.startsWith(`line ${LINES} `)) break;
      if (tries > 2000) throw new Error(`the status job never printed line ${LINES}; last: ${last}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const all = { lines: LINES, maxBytes: 1024 * 1024 };
    const tail = await runtime.status(job.id);
    const full = await runtime.status(job.id, all);
    if (full.output.lines.length !== LINES) throw new Error(`status returned ${full.output.lines.length} of ${LINES} lines`);
    const facts = { job: job.id, pid: job.pid, cgroup: '/sys/fs/cgroup/heph-jobs-0/job-0', exit: null, done: false, procs: 2 };
    const request = (lines) => ({ type: 'read', params: { job: job.id, tail: lines, maxBytes: 1024 * 1024 } });
    const groups = [];
    const goals = [];
    for (const [label, options, snapshot] of [
      ['default tail (50 lines)', {}, tail.output],
      [`all ${LINES} lines`, all, full.output],
    ]) {
      const payload = { output: snapshot, facts };
      await echo.request({ type: 'set', value: payload });
      const bytes = encodeFrame(payload).length;
      const cases = [
        {
          name: 'runtime.status',
          fn: async () => {
            const start = now();
            await runtime.status(job.id, options);
            return now() - start;
          },
        },
        {
          name: 'raw msgpack round trip',
          fn: async () => {
            const start = now();
            await echo.request(request(snapshot.lines.length));
            return now() - start;
          },
        },
      ];
      const results = await interleave({ runs: ctx.runs(1000, 200), warmup: 50, cases, progress: ctx.progress(`${id} ${label}`) });
      const rows = cases.map((entry, index) => row(entry.name, results.get(entry.name), { ours: index === 0 }));
      const g = group(`${label}, reply of ${(bytes / 1024).toFixed(1)} KiB`, rows, 'time');
      groups.push(g);
      goals.push(goal(`${label}: median ≤ 3× raw`, ratioOf(g, 'raw msgpack round trip'), '<=', 3));
    }
    return { groups, goals, notes: ['runtime.status also builds the report text; the raw round trip only decodes the reply'] };
  } finally {
    await echo.close();
    await runtime.close();
  }
}
