/**
 * Figure 5, crash cleanup: a runtime in its own process, SIGKILLed while 8 jobs run (100
 * processes in all), to the last of those processes gone from /proc (reaped). The supervisor
 * notices (channel EOF, pidfd of its parent), kills and reaps every job. Against: a raw
 * cgroup.kill of the same 8 trees (addon harness, timed the same way).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import readline from 'node:readline';
import { BENCH_DIR, freshMarker, TREE } from '../lib/context.mjs';
import { AddonHarness, envEntries } from '../lib/harness.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row, skippedRow } from '../lib/report.mjs';
import { isDead, isReaped, killMarked, snapshot, waitForMarked, waitUntil } from '../lib/procs.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'crash';
export const title = 'crash cleanup: runtime SIGKILLed with 8 jobs (100 processes) to last process gone';

// 8 jobs, 100 processes in all (each count includes the job's own shell).
const COUNTS = [13, 13, 13, 13, 12, 12, 12, 12];
const TOTAL = COUNTS.reduce((a, b) => a + b, 0);
const HOST = path.join(BENCH_DIR, 'helpers', 'crash-host.mjs');

async function crashOnce() {
  const marker = freshMarker('crash');
  const [key, value] = marker.split('=');
  const host = spawn(process.execPath, [HOST, TREE, ...COUNTS.map(String)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, [key]: value },
  });
  const exited = once(host, 'exit');
  try {
    const line = await new Promise((resolve, reject) => {
      readline.createInterface({ input: host.stdout }).once('line', resolve);
      host.once('exit', (code) => reject(new Error(`the runtime host exited early (${code})`)));
    });
    const info = JSON.parse(line);
    if (info.jobs.some((job) => job.state !== 'running')) throw new Error(`a job did not start: ${line}`);
    // The marked processes are the jobs' (the host itself is excluded: it is not a job process).
    const marked = await waitForMarked(marker, TOTAL + 2); // + the host and its supervisor
    const seen = snapshot(marked.filter((pid) => pid !== host.pid && pid !== info.supervisorPid));
    const supervisor = snapshot([info.supervisorPid]);
    // The runtime's own death (its memory torn down, its descriptors closed) is the earliest the
    // supervisor can learn of it: the channel's EOF comes when the kernel closes its files.
    let hostMs = null;
    host.once('exit', () => (hostMs = now() - start));
    const start = now();
    host.kill('SIGKILL');
    await waitUntil(() => seen.every(isReaped), 'every job process gone after the runtime was killed', 20_000, 1);
    const ms = now() - start;
    // Exited, not reaped: with its parent gone, pid 1 reaps it (lazily on this machine).
    await waitUntil(() => supervisor.every(isDead), 'the supervisor exited', 20_000, 1);
    const supervisorMs = now() - start;
    await exited;
    return { ms, supervisorMs, hostMs, processes: seen.length };
  } finally {
    host.kill('SIGKILL');
    await exited;
    await killMarked(marker);
  }
}

export async function run(ctx) {
  const harness = await AddonHarness.start();
  try {
    const cases = [{ name: 'supervisor after runtime SIGKILL', fn: crashOnce }];
    if (harness.cgroup) {
      cases.push({
        name: 'raw cgroup.kill of the 8 trees',
        fn: async () => {
          const marker = freshMarker('crash');
          const answer = await harness.request({ op: 'kill', counts: COUNTS, marker, tree: TREE, env: envEntries(process.env) });
          await killMarked(marker);
          return answer;
        },
      });
    }
    const results = await interleave({ runs: ctx.runs(12, 3), warmup: 1, cases, progress: ctx.progress(id) });
    const rows = cases.map((entry, index) => row(entry.name, results.get(entry.name).map((s) => s.ms), { ours: index === 0 }));
    // The runtime's own death, the earliest the supervisor can learn of it (see crashOnce).
    rows.push(row('the runtime itself, SIGKILL to reaped', results.get(cases[0].name).map((s) => s.hostMs)));
    if (!harness.cgroup) rows.push(skippedRow('raw cgroup.kill of the 8 trees', harness.hello.cgroupReason));
    const counted = results.get(cases[0].name).map((s) => s.processes);
    const supervisorGone = results.get(cases[0].name).map((s) => s.supervisorMs).sort((a, b) => a - b);
    const g = group('', rows, 'time');
    return {
      groups: [g],
      goals: [goal('≤ 1.5× raw cgroup.kill', ratioOf(g, 'raw cgroup.kill of the 8 trees'), '<=', 1.5)],
      notes: [
        `job processes seen per run: ${[...new Set(counted)].join(', ')}; the supervisor itself had exited a median ${supervisorGone[Math.floor(supervisorGone.length / 2)].toFixed(1)} ms after the kill`,
        "the runtime's death is timed by the bench's own reap of it (its 'exit' event), so it runs a little late",
        'both are timed from the kill to every job process reaped (/proc polled every ~1 ms)',
      ],
    };
  } finally {
    await harness.close();
  }
}
