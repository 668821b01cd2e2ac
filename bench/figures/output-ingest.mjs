/**
 * Figure 3, output ingest: a job writing SIZE bytes as fast as it can, in long lines (4 KiB) and
 * in short lines (80 bytes). Ours: the job's wall time under the supervisor, from background()
 * to its exit reported (the leader can only exit once the supervisor has read all but the last
 * pipe buffer). Against: the same program writing to /dev/null, and to a pipe that Node reads
 * and discards (child_process, 'close').
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { JobRuntime } from '../../dist/src/index.js';
import { JobEvents } from '../lib/job-events.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'ingest';
export const title = 'output ingest: a job writing a flood of output';

const MiB = 1024 * 1024;
// `yes` repeats its argument in large writes; `head -c` cuts the stream at SIZE bytes.
const writer = (lineBytes, bytes) => `yes "$(printf '%${lineBytes - 1}s' '' | tr ' ' x)" | head -c ${bytes}`;

export async function run(ctx) {
  const bytes = ctx.runs(1024, 64) * MiB;
  const runtime = await JobRuntime.start({ settleMs: 0 });
  const events = new JobEvents(runtime);
  const cleanupLag = [];
  const ours = (command) => async () => {
    const start = now();
    const report = await runtime.background({ command });
    const end = await events.wait('exited', report.id);
    cleanupLag.push((await events.wait('cleaned-up', report.id)) - end);
    events.forget(report.id);
    const final = await runtime.status(report.id, { lines: 0 });
    if (final.state !== 'exited' || final.exitCode !== 0) throw new Error(`ingest job ended ${final.state} ${final.exitCode}`);
    return end - start;
  };
  const devNull = (command) => async () => {
    const start = now();
    const child = spawn('/bin/sh', ['-c', `${command} > /dev/null`], { stdio: 'ignore' });
    const [code] = await once(child, 'exit');
    if (code !== 0) throw new Error(`writer exited ${code}`);
    return now() - start;
  };
  const nodePipe = (command) => async () => {
    const start = now();
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'pipe', 'ignore'] });
    let received = 0;
    child.stdout.on('data', (chunk) => (received += chunk.length));
    const [code] = await once(child, 'close');
    if (code !== 0 || received !== bytes) throw new Error(`pipe writer exited ${code} after ${received} bytes`);
    return now() - start;
  };
  const groups = [];
  const goals = [];
  try {
    await runtime.capabilities();
    for (const [label, lineBytes] of [
      ['long lines (4 KiB)', 4096],
      ['short lines (80 B)', 80],
    ]) {
      const command = writer(lineBytes, bytes);
      const cases = [
        { name: 'job under the supervisor', fn: ours(command) },
        { name: 'same program > /dev/null', fn: devNull(command) },
        { name: 'raw pipe read by Node', fn: nodePipe(command) },
      ];
      const results = await interleave({ runs: ctx.runs(5, 3), warmup: 1, cases, progress: ctx.progress(`${id} ${label}`) });
      const work = { amount: bytes / MiB, unit: 'MiB' };
      const rows = cases.map((entry, index) => row(entry.name, results.get(entry.name), { ours: index === 0, work }));
      const g = group(`${label}, ${bytes / MiB} MiB per run`, rows, 'rate');
      groups.push(g);
      goals.push(goal(`${label}: ≥ 0.8× the raw Node pipe`, ratioOf(g, 'raw pipe read by Node'), '>=', 0.8));
    }
    const lag = cleanupLag.sort((a, b) => a - b)[Math.floor(cleanupLag.length / 2)];
    return { groups, goals, notes: [`after the exit, cleanup (output drained, cgroup removed) was reported a median ${lag.toFixed(1)} ms later`] };
  } finally {
    await runtime.close();
  }
}
