/**
 * Figure 4, tree kill: one job of 100 processes (some setsid, some double-forked orphans) to all
 * of them reaped. Ours: runtime.kill with KILL (it resolves once every process is gone and reaped).
 * Against: a raw cgroup.kill of the same tree (addon harness: spawned into a cgroup, killed, its
 * reaper reaps), the tree-kill package and execa's kill on a child_process tree. Survivors are
 * counted from /proc for each and killed by pid afterwards.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { execa } from 'execa';
import treeKill from 'tree-kill';
import { JobRuntime } from '../../dist/src/index.js';
import { freshMarker, TREE } from '../lib/context.mjs';
import { timeDeaths } from '../lib/death.mjs';
import { AddonHarness, envEntries } from '../lib/harness.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row, skippedRow } from '../lib/report.mjs';
import { isDead, isReaped, killMarked, snapshot, waitForMarked, waitUntil } from '../lib/procs.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'kill';
export const title = 'tree kill: a job of 100 processes (some setsid) to all reaped';

const PROCESSES = 100;

function envWith(marker) {
  const [key, value] = marker.split('=');
  return { ...process.env, COUNT: String(PROCESSES), [key]: value };
}

/** runtime.kill with KILL; kernel check afterwards. */
function viaRuntime(runtime) {
  return async () => {
    const marker = freshMarker('kill');
    const report = await runtime.background({ command: `exec /bin/sh ${TREE}`, env: envWith(marker) });
    const seen = snapshot(await waitForMarked(marker, PROCESSES));
    const start = now();
    await runtime.kill(report.id, { signal: 'KILL' });
    let end = now();
    const survivors = seen.filter((entry) => !isDead(entry)).length;
    if (!seen.every(isReaped)) {
      await waitUntil(() => seen.every(isReaped), 'every process reaped after runtime.kill', 5000, 1);
      end = now();
    }
    await killMarked(marker);
    return { ms: end - start, survivors };
  };
}

/** A child_process tree; `kill(child)` returns a promise that settles when the call is done. */
function viaChild(start, kill) {
  return async () => {
    const marker = freshMarker('kill');
    const child = start(marker);
    const seen = snapshot(await waitForMarked(marker, PROCESSES));
    const t0 = now();
    const result = await timeDeaths(seen, t0, kill(child));
    await killMarked(marker);
    return result;
  };
}

const startPlain = (marker) => spawn('/bin/sh', [TREE], { env: envWith(marker), stdio: 'ignore' });

const killWithTreeKill = (child) =>
  new Promise((resolve, reject) => treeKill(child.pid, 'SIGKILL', (error) => (error ? reject(error) : resolve())));

const startExeca = (marker) => {
  const child = execa('/bin/sh', [TREE], { env: envWith(marker), extendEnv: false });
  // execa's promise settles only when its pipes close, which survivors holding them prevent;
  // settle it after the survivors are killed.
  child.catch(() => {});
  return child;
};

// The call is done when the child it killed has exited (the kill itself returns at once).
const killWithExeca = (child) => {
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  return exited;
};

export async function run(ctx) {
  const cgroupRuntime = await JobRuntime.start({ settleMs: 0 });
  const groupRuntime = await JobRuntime.start({ settleMs: 0, containment: 'process-group' });
  const harness = await AddonHarness.start();
  try {
    const mode = (await cgroupRuntime.capabilities()).containment.mode;
    await groupRuntime.capabilities();
    const oursName = `runtime.kill KILL (${mode})`;
    const cases = [
      { name: oursName, fn: viaRuntime(cgroupRuntime) },
      { name: 'tree-kill package', fn: viaChild(startPlain, killWithTreeKill) },
      { name: "execa's kill", fn: viaChild(startExeca, killWithExeca) },
    ];
    if (mode !== 'process-group') cases.push({ name: 'runtime.kill KILL (process-group)', fn: viaRuntime(groupRuntime) });
    if (harness.cgroup) {
      cases.push({
        name: 'raw cgroup.kill',
        fn: async () => {
          const marker = freshMarker('kill');
          const answer = await harness.request({ op: 'kill', counts: [PROCESSES], marker, tree: TREE, env: envEntries(process.env) });
          await killMarked(marker);
          return answer;
        },
      });
    }
    const results = await interleave({ runs: ctx.runs(15, 3), warmup: 1, cases, progress: ctx.progress(id) });
    const rows = cases.map((entry) => {
      const samples = results.get(entry.name);
      return row(entry.name, samples.map((s) => s.ms), { ours: entry.name === oursName, survivors: samples.map((s) => s.survivors) });
    });
    if (!harness.cgroup) rows.push(skippedRow('raw cgroup.kill', harness.hello.cgroupReason));
    const g = group('', rows, 'time');
    const oursRow = rows.find((entry) => entry.ours);
    return {
      groups: [g],
      goals: [
        goal('≤ 1.2× raw cgroup.kill', ratioOf(g, 'raw cgroup.kill'), '<=', 1.2),
        goal('faster than tree-kill', ratioOf(g, 'tree-kill package'), '<=', 1),
        goal('0 survivors', oursRow.survivors.max, '<=', 0, (value) => `${value}`),
      ],
      notes: [
        'ours and raw cgroup.kill are timed to every process reaped; tree-kill and execa to every process exited (zombie or gone), because their orphans go to pid 1, which on this machine reaps only every ~2 s',
        'a survivor is a process still alive 300 ms after the kill call returned and the last death',
      ],
    };
  } finally {
    await harness.close();
    await cgroupRuntime.close();
    await groupRuntime.close();
  }
}
