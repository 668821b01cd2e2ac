/**
 * Scenario 4 of the hardening issue: a fork bomb and a fast forker in jobs. While they run, the
 * supervisor stays responsive (another job starts and reports), the kill converges, and nothing
 * survives: the FIFO each job's processes inherit reaches EOF, no process carries the jobs' marker,
 * the supervisor has no zombie child, and (cgroup mode) the job cgroups are gone.
 *
 * The bound: where the cgroup v2 tree offers a pids controller its pids.max would do; this
 * machine's has none (it lives in the v1 hierarchy), so the bomb bounds itself (fixture's DEPTH).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobRuntime } from '../../src/index.js';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';
import { EofOracle, zombieChildren } from '../helpers/kernel.js';
import { EnvMarker, summary, waitForLines, within } from '../helpers/hardening.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime } from '../helpers/runtime.js';
import { supervisorPid } from '../../src/testing.js';

const ROUNDS = 3;
const DEPTH = 8;
const LEAVES = 2 ** DEPTH;

function pidsControllerNote(): string {
  const probe = findOwnCgroupDir();
  if (!probe.ok) return 'no cgroup v2 tree: the fixture bounds itself';
  try {
    const controllers = fs.readFileSync(path.join(probe.parent, 'cgroup.subtree_control'), 'utf8');
    return controllers.split(/\s+/).includes('pids') ? 'pids controller present' : 'no pids controller: the fixture bounds itself';
  } catch {
    return 'cgroup.subtree_control unreadable: the fixture bounds itself';
  }
}

/** Another job starts, runs and reports (through the same supervisor); returns how long it took. */
async function probeJob(runtime: JobRuntime, failures: string[], when: string): Promise<number> {
  const asked = Date.now();
  const probe = await within(runtime.background({ command: 'echo alive; exit 5', waitMs: 60_000 }), 60_000, `a probe job to report (${when})`);
  if (probe.state !== 'exited' || probe.exitCode !== 5 || !probe.text.includes('> alive')) failures.push(`${when}: probe job reported:\n${probe.text}`);
  return Date.now() - asked;
}

describe.each(modeRows())('fork bomb and fast forker (%s)', (mode, skip) => {
  it.skipIf(skip)(`keep the supervisor responsive, and the kill leaves nothing (${ROUNDS} rounds)`, async () => {
    const failures: string[] = [];
    const notes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const runtime = await startRuntime(mode, { killGraceMs: 500 });
      const marker = new EnvMarker();
      const bombOracle = new EofOracle();
      const forkerOracle = new EofOracle();
      try {
        const roundStarted = Date.now();
        const bomb = await runtime.background({ command: `${bombOracle.prefix} DEPTH=${DEPTH} exec ${FIXTURES}/fork-bomb.sh`, env: marker.env() });
        const forker = await runtime.background({ command: `${forkerOracle.prefix} exec ${FIXTURES}/fast-forker.sh`, env: marker.env() });
        // Responsiveness while the bomb grows...
        const probes = [await probeJob(runtime, failures, `round ${round}, growing`)];
        await waitForLines(runtime, bomb.id, (lines) => lines.filter((line) => line === 'leaf').length === LEAVES, `${LEAVES} leaves`, 60_000);
        await waitForLines(runtime, forker.id, (lines) => lines.includes('forked 300'), '300 forks', 60_000);
        const peakAfter = Date.now() - roundStarted;

        // Negative control: while the jobs run, both oracles see them (an oracle that cannot fail proves nothing).
        const alive = marker.survivors().length;
        if (alive < LEAVES) failures.push(`round ${round}: the marker scan sees ${alive} processes while at least ${LEAVES} run`);
        if (bombOracle.closed || forkerOracle.closed) failures.push(`round ${round}: a FIFO reached EOF while its job ran`);

        // ...and at its peak, with the forker still forking.
        probes.push(await probeJob(runtime, failures, `round ${round}, at peak`));

        const killStarted = Date.now();
        const [bombKilled, forkerKilled] = await within(
          Promise.all([runtime.kill(bomb.id), runtime.kill(forker.id)]),
          60_000,
          'the kills to converge',
          () => runtime.list().map((job) => job.header),
        );
        const killMs = Date.now() - killStarted;
        for (const killed of [bombKilled, forkerKilled]) {
          if (killed.state !== 'killed' || !killed.cleanedUp) failures.push(`round ${round}: kill reported:\n${killed.text}`);
          if (!killed.text.includes(`job ${killed.id} has ended`)) failures.push(`round ${round}: final report does not say the job ended:\n${killed.text}`);
        }
        await bombOracle.waitEof(10_000);
        await forkerOracle.waitEof(10_000);
        const survivors = marker.survivors();
        if (survivors.length > 0) failures.push(`round ${round}: ${survivors.length} marked processes survived: ${survivors.slice(0, 20).join(' ')}`);
        const zombies = zombieChildren(supervisorPid(runtime)!);
        if (zombies.length > 0) failures.push(`round ${round}: zombie children of the supervisor: ${zombies.join(' ')}`);
        const root = (await runtime.capabilities()).containment.cgroupRoot;
        if (mode === 'cgroup') {
          // The cgroup made ahead for the next job (job-<newest + 1>) is no leftover while it holds no process.
          const ahead = `job-${Math.max(...runtime.list().map((job) => job.id)) + 1}`;
          const left = fs
            .readdirSync(root!)
            .filter((name) => name.startsWith('job-') && !(name === ahead && fs.readFileSync(path.join(root!, name, 'cgroup.procs'), 'latin1') === ''));
          if (left.length > 0) failures.push(`round ${round}: job cgroups left: ${left.join(' ')}`);
        }
        notes.push(`round ${round}: ${alive} processes alive at peak (reached in ${peakAfter} ms), probes answered in ${probes.join(' and ')} ms, kill converged in ${killMs} ms`);
      } finally {
        bombOracle.dispose();
        forkerOracle.dispose();
        await runtime.close();
      }
    }
    console.log(`[${mode}] ${pidsControllerNote()}; ${notes.join('; ')}`);
    summary(4, ROUNDS, failures.length, mode);
    expect(failures).toEqual([]);
  }, 240_000);
});
