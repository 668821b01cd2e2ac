/**
 * Issue 28, item 2: /proc/PID/stat start times are shifted by the reader's boot-time offset, so a
 * runtime in a time namespace of its own (`unshare --time --boottime 86400`) read a live
 * instance's start time as another and judged it dead: whichever started second killed all the
 * other's jobs at its start sweep. Both orders, both modes. A process marked by a dead instance
 * (our pid with a start time no process has) is planted before each sweep: it dying tells that the
 * sweep has judged everything, so the live jobs' oracles can be read.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { JobRuntime } from '../../src/index.js';
import { waitFor } from '../../src/testing.js';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, tempDir } from '../helpers/runtime.js';
import { BOUNDED } from '../helpers/bounded.js';

const BOOT_OFFSET_S = 86_400;
// unshare --fork ignores SIGTERM; with --kill-child its SIGKILL takes the host, whose supervisor
// then stops the host's jobs.
const inTimeNamespace = ['--time', `--boottime=${BOOT_OFFSET_S}`, '--fork', '--kill-child'];
const probe = spawnSync('unshare', [...inTimeNamespace, 'cat', '/proc/self/timens_offsets'], { ...BOUNDED, encoding: 'utf8' });
const noTimeNamespace = probe.status === 0 && /boottime\s+86400\b/.test(probe.stdout) ? null : `cannot make a time namespace (unshare --time): ${probe.stderr.trim() || probe.error?.message}`;
if (noTimeNamespace) console.warn(`[heph-jobs tests] supervisors in two time namespaces skipped: ${noTimeNamespace}`);

const planted: ChildProcess[] = [];

/** A process a dead instance marked (our pid, start time 1): a sweep that has run has killed it. */
function plantDeadInstanceProcess(): EofOracle {
  const oracle = new EofOracle();
  planted.push(spawn('sh', ['-c', `${oracle.prefix} exec sleep 1000`], {
    stdio: 'ignore',
    env: { ...process.env, HEPH_JOB: `${process.pid}-1:1` },
  }));
  return oracle;
}

/** SIGKILLs a host started by hostInTimeNamespace and waits for it to be gone. */
async function killHost(host: ChildProcess): Promise<void> {
  if (host.exitCode !== null || host.signalCode !== null) return;
  const gone = new Promise((resolve) => host.once('exit', resolve));
  host.kill('SIGKILL');
  await gone;
}

/** A runtime host (test/fixtures/runtime-host.mjs) in a time namespace of its own. */
async function hostInTimeNamespace(mode: string, command: string, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  const host = spawn('unshare', [...inTimeNamespace, process.execPath, path.join(FIXTURES, 'runtime-host.mjs'), mode, command], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  await new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: host.stdout! }).once('line', resolve);
    host.once('exit', (code) => reject(new Error(`the time-namespace host exited early (${code})`)));
  });
  return host;
}

describe.each(modeRows())('supervisors in two time namespaces (%s)', (mode, skip) => {
  it.skipIf(skip || noTimeNamespace !== null)('neither start sweep takes the other\'s live jobs for a dead instance\'s', async () => {
    const hostJob = new EofOracle();
    const insideJob = new EofOracle();
    const oracles = [hostJob, insideJob];
    const runtimes: JobRuntime[] = [];
    let inside: ChildProcess | null = null;
    try {
      const first = await JobRuntime.start({ containment: mode, settleMs: 0, killGraceMs: 1000 });
      runtimes.push(first);
      await first.background({ command: `${hostJob.prefix} exec sleep 1000` });

      // A runtime in a time namespace starts second: its sweep must spare the first one's job.
      const deadMarked = plantDeadInstanceProcess();
      oracles.push(deadMarked);
      inside = await hostInTimeNamespace(mode, `${insideJob.prefix} exec sleep 1000`);
      await deadMarked.waitEof(20_000);
      expect(await hostJob.eofWithin(300)).toBe(false);

      // And a runtime on the host's clock starting after it spares the namespace's job.
      const deadMarkedAgain = plantDeadInstanceProcess();
      oracles.push(deadMarkedAgain);
      runtimes.push(await JobRuntime.start({ containment: mode, settleMs: 0, killGraceMs: 1000 }));
      await runtimes[1]!.capabilities();
      await deadMarkedAgain.waitEof(20_000);
      expect(await insideJob.eofWithin(300)).toBe(false);
      expect(await hostJob.eofWithin(0)).toBe(false);

      // Each runtime still stops its own: both oracles can reach EOF.
      await killHost(inside);
      await insideJob.waitEof(10_000);
      await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
      await hostJob.waitEof(10_000);
    } finally {
      if (inside !== null) await killHost(inside);
      await Promise.all(runtimes.map((runtime) => runtime.close()));
      for (const child of planted.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      for (const oracle of oracles) oracle.dispose();
    }
  });
});

describe.each(modeRows())('a lock held from another time namespace (%s)', (mode, skip) => {
  it.skipIf(skip || noTimeNamespace !== null)('a waiter takes its holder for alive: the job waits, the holder runs on', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const holderJob = new EofOracle();
    let inside: ChildProcess | null = null;
    let runtime: JobRuntime | null = null;
    try {
      inside = await hostInTimeNamespace(mode, `${holderJob.prefix} exec sleep 1000`, { HEPH_TEST_LOCKS: 'port:6400', HEPH_TEST_LOCK_DIR: lockDir });
      runtime = await JobRuntime.start({ containment: mode, settleMs: 0, killGraceMs: 1000, lockDir });
      // The waiting call answers once the job runs: the lock is blocked, so not before the holder dies.
      const waiter = runtime.background({ command: 'exec sleep 1000', locks: ['port:6400'] });
      const live = runtime;
      const waiting = () => live.list().some((job) => job.state === 'waiting');
      expect(await waitFor(runtime, waiting, 10_000)).toBe(true);
      expect(await holderJob.eofWithin(1000)).toBe(false);
      expect(waiting()).toBe(true);
      // The holder's runtime dies: its job is stopped, and only then does the waiter get the port.
      await killHost(inside);
      await holderJob.waitEof(10_000);
      expect((await waiter).state).toBe('running');
    } finally {
      if (inside !== null) await killHost(inside);
      await runtime?.close();
      holderJob.dispose();
    }
  });
});
