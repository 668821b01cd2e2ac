/**
 * Issue 12, item 1: the default lock directory planted by another local user. Root without
 * XDG_RUNTIME_DIR uses <tmpdir>/heph-jobs-0/locks; an unprivileged user (made here with useradd,
 * acting through setpriv) pre-creates heph-jobs-0 in a shared, sticky tmp of the test's own. Each
 * attack must neither chmod nor fill a directory that is not the runtime's, nor kill anything, nor
 * make root's jobs fail; the runtime says it did not use the default place.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Attacker, attackerUnavailable, sharedTmp, snapshot } from '../helpers/attacker.js';
import { isRunning, waitUntil } from '../helpers/kernel.js';
import { LineChild } from '../helpers/line-child.js';
import { FIXTURES, tempDir } from '../helpers/runtime.js';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';
import { BOUNDED } from '../helpers/bounded.js';

const RESOURCE = 'port:7000';
const SWAP_ROUNDS = Number(process.env.HEPH_LOCKDIR_SWAP_ROUNDS ?? 5);

let attacker: Attacker;
beforeAll(() => {
  if (!attackerUnavailable) attacker = new Attacker();
});
afterAll(async () => {
  await attacker?.dispose();
});

/** The lock-dir fixture: a runtime whose default lock directory lies in `tmp`. */
function host(tmp: string, mode = 'process-group', extra: NodeJS.ProcessEnv = {}): LineChild {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra, TMPDIR: tmp };
  delete env.XDG_RUNTIME_DIR;
  return new LineChild(path.join(FIXTURES, 'lockdir-host.mjs'), [mode, RESOURCE], env);
}

/** Starts a host, runs one locked job, closes; returns what it said. */
async function runOnce(tmp: string, between?: () => void | Promise<void>, mode = 'process-group', extra: NodeJS.ProcessEnv = {}) {
  const runtime = host(tmp, mode, extra);
  try {
    const ready = await runtime.next('ready');
    await between?.();
    runtime.send('job');
    const { job } = (await runtime.next('job')) as { job: { state: string; exitCode: number | null; text: string } };
    return { limitations: ready.limitations as string[], job };
  } finally {
    await runtime.closeWith('close');
  }
}

/** A pid that names no process now (a child that has exited and been reaped). */
function deadPid(): number {
  return spawnSync('true', BOUNDED).pid!;
}

/** A start time no process of this boot has (the forged instance's). */
const FORGED_START = '4242';

/**
 * Processes outside heph-jobs that a forged record names. The record names a dead instance (the
 * dead pid with a start time no process had); the sentinels look like that instance's leftovers
 * to a cleanup that trusts names: a root process with the dead pid's marker as markers used to be
 * written, one in a cgroup named as its subtree used to be (where a cgroup v2 tree is writable),
 * and one of the attacker's own carrying the instance's marker as markers are written now. None
 * may be killed. (A root process carrying today's marker of a dead instance is that instance's
 * leftover by definition, swept at every supervisor start, so it is no sentinel.)
 */
class Sentinels {
  readonly children: ChildProcess[] = [];
  readonly cgroups: string[] = [];

  constructor(readonly dead: number, attacker: Attacker) {
    this.children.push(spawn('sleep', ['1000'], { stdio: 'ignore', env: { ...process.env, HEPH_JOB: `${dead}:1` } }));
    this.children.push(attacker.start(`HEPH_JOB=${dead}-${FORGED_START}:1 exec sleep 1000`));
    const probe = findOwnCgroupDir();
    if (!probe.ok) return;
    const dir = path.join(probe.parent, `heph-jobs-${dead}`, 'victim');
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch {
      return;
    }
    this.cgroups.push(dir);
    this.children.push(spawn('sh', ['-c', `echo $$ > ${dir}/cgroup.procs && exec sleep 1000`], { stdio: 'ignore' }));
  }

  pids(): number[] {
    return this.children.map((child) => child.pid!);
  }

  /** The record the attacker plants: the dead instance as holder (pid, start time, this boot), a sentinel's cgroup as its job's. */
  forgedRecord(): string {
    const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    const cgroup = this.cgroups[0] ?? `/sys/fs/cgroup/heph-jobs-${this.dead}/victim`;
    return `${JSON.stringify({ resource: RESOURCE, mode: 'exclusive', pid: this.dead, start: FORGED_START, boot, job: 1, cgroup })}\n`;
  }

  async ready(): Promise<void> {
    for (const dir of this.cgroups) await waitUntil(() => fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim() !== '', 'the cgroup sentinel to join');
  }

  allRunning(): boolean {
    return this.pids().every((pid) => isRunning(pid));
  }

  async dispose(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    // (A cleanup that wrongly acted on a forged record has removed them already.)
    for (const dir of this.cgroups.flatMap((cgroup) => [cgroup, path.dirname(cgroup)])) {
      try {
        fs.rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
}

/** A root-owned directory the attacker points at: mode 0755, one file inside. */
function victimDir(mode = 0o755): string {
  const dir = path.join(tempDir(), 'victim');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'canary'), 'root data\n');
  fs.chmodSync(dir, mode);
  return dir;
}

/** The lock file name of RESOURCE (its layout: a slug, then a hash of the resource). */
async function lockFileName(): Promise<string> {
  const { lockFileName: name } = await import('../../supervisor/locks/kernel-locks.js');
  return name(RESOURCE);
}

const LOCK_DIR_WARNING = /lock director/i;

describe.skipIf(attackerUnavailable !== null)('the default lock directory planted by another user (issue 12, item 1)', () => {
  it('unplanted: root makes <tmp>/heph-jobs-0 and its locks 0700 itself, and says nothing', async () => {
    const tmp = sharedTmp();
    try {
      // The job lists the lock directory while it holds its lock there.
      const { limitations, job } = await runOnce(tmp, undefined, 'process-group', { HEPH_TEST_JOB: `echo ran; ls ${tmp}/heph-jobs-0/locks` });
      expect(job).toMatchObject({ state: 'exited', exitCode: 0 });
      expect(limitations.filter((text) => LOCK_DIR_WARNING.test(text))).toEqual([]);
      for (const level of ['heph-jobs-0', 'heph-jobs-0/locks']) {
        const stat = fs.lstatSync(path.join(tmp, level));
        expect({ level, dir: stat.isDirectory(), uid: stat.uid, mode: stat.mode & 0o7777 }).toEqual({ level, dir: true, uid: 0, mode: 0o700 });
      }
      expect(job.text).toContain(`> ${await lockFileName()}`);
      // Released and used by no one else: its lock file is removed (issue 28, item 6).
      expect(fs.readdirSync(path.join(tmp, 'heph-jobs-0', 'locks'))).not.toContain(await lockFileName());
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('heph-jobs-0 a symlink to a root-owned directory: that directory is neither chmodded nor filled', async () => {
    const tmp = sharedTmp();
    const victim = victimDir();
    const before = snapshot(victim);
    try {
      attacker.run(`ln -s ${victim} ${tmp}/heph-jobs-0`);
      const { limitations, job } = await runOnce(tmp);
      expect(snapshot(victim)).toEqual(before);
      // The private place it used instead is gone once the runtime closed.
      expect(fs.readdirSync(tmp)).toEqual(['heph-jobs-0']);
      expect(job).toMatchObject({ state: 'exited', exitCode: 0 });
      expect(limitations.some((text) => LOCK_DIR_WARNING.test(text))).toBe(true);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('heph-jobs-0 the attacker\'s own directory whose locks is a symlink to a root-owned directory: untouched', async () => {
    const tmp = sharedTmp();
    const victim = victimDir();
    const before = snapshot(victim);
    try {
      attacker.run(`mkdir -m 0777 ${tmp}/heph-jobs-0 && ln -s ${victim} ${tmp}/heph-jobs-0/locks`);
      const { limitations, job } = await runOnce(tmp);
      expect(snapshot(victim)).toEqual(before);
      expect(job).toMatchObject({ state: 'exited', exitCode: 0 });
      expect(limitations.some((text) => LOCK_DIR_WARNING.test(text))).toBe(true);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('a directory the attacker owns, with a forged holder record naming a dead pid and a cgroup: nothing is killed, root\'s jobs run', async () => {
    const tmp = sharedTmp();
    const sentinels = new Sentinels(deadPid(), attacker);
    try {
      await sentinels.ready();
      const name = await lockFileName();
      attacker.run(`mkdir -m 0777 -p ${tmp}/heph-jobs-0/locks && printf '%s' '${sentinels.forgedRecord()}' > ${tmp}/heph-jobs-0/locks/${name} && chmod 0666 ${tmp}/heph-jobs-0/locks/${name}`);
      const { limitations, job } = await runOnce(tmp);
      expect(job).toMatchObject({ state: 'exited', exitCode: 0 });
      expect(sentinels.allRunning()).toBe(true);
      expect(limitations.some((text) => LOCK_DIR_WARNING.test(text))).toBe(true);
      // Nothing of root's went into the attacker's directory.
      expect(fs.readdirSync(path.join(tmp, 'heph-jobs-0', 'locks'))).toEqual([name]);
    } finally {
      await sentinels.dispose();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('locks swapped after the runtime started, for a directory with a forged record: nothing is killed, nothing root-owned is touched', async () => {
    const tmp = sharedTmp();
    const checked = victimDir(0o700);
    const before = snapshot(checked);
    const sentinels = new Sentinels(deadPid(), attacker);
    try {
      await sentinels.ready();
      const name = await lockFileName();
      // What a check at start sees: a root-owned 0700 directory. What the first lock meets: the forgery.
      attacker.run(
        `mkdir -m 0777 ${tmp}/heph-jobs-0 && ln -s ${checked} ${tmp}/heph-jobs-0/locks && mkdir -m 0777 ${tmp}/heph-jobs-0/forged && ` +
          `printf '%s' '${sentinels.forgedRecord()}' > ${tmp}/heph-jobs-0/forged/${name} && chmod 0666 ${tmp}/heph-jobs-0/forged/${name}`,
      );
      const { limitations, job } = await runOnce(tmp, () => {
        attacker.run(`rm ${tmp}/heph-jobs-0/locks && mv -T ${tmp}/heph-jobs-0/forged ${tmp}/heph-jobs-0/locks`);
      });
      expect(job).toMatchObject({ state: 'exited', exitCode: 0 });
      expect(sentinels.allRunning()).toBe(true);
      expect(snapshot(checked)).toEqual(before);
      expect(limitations.some((text) => LOCK_DIR_WARNING.test(text))).toBe(true);
    } finally {
      await sentinels.dispose();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('heph-jobs-0 flipped between a symlink and the attacker\'s directory while root starts runtimes: never used, never failing', { timeout: 120_000 }, async () => {
    const tmp = sharedTmp();
    const victim = victimDir();
    const before = snapshot(victim);
    // The attacker keeps replacing heph-jobs-0 (it may: the entry is its own) as fast as it can.
    const flipper = attacker.start(
      `cd ${tmp} && mkdir -m 0777 own && while :; do ln -sfn ${victim} link.tmp && mv -T link.tmp heph-jobs-0; rm -f heph-jobs-0; mv -T own heph-jobs-0 2>/dev/null && mv -T heph-jobs-0 own; done`,
    );
    try {
      await waitUntil(() => fs.existsSync(path.join(tmp, 'own')), 'the attacker to start flipping');
      for (let round = 0; round < SWAP_ROUNDS; round++) {
        const { limitations, job } = await runOnce(tmp);
        expect(job).toMatchObject({ state: 'exited', exitCode: 0 });
        // Either root got there first (its own 0700 directory, which the attacker cannot replace)
        // or it says it used a private place.
        const entry = fs.lstatSync(path.join(tmp, 'heph-jobs-0'), { throwIfNoEntry: false });
        const rootOwns = entry?.isDirectory() === true && entry.uid === 0;
        expect(rootOwns || limitations.some((text) => LOCK_DIR_WARNING.test(text))).toBe(true);
        expect(snapshot(victim)).toEqual(before);
      }
    } finally {
      flipper.kill('SIGKILL');
      await new Promise((resolve) => (flipper.exitCode !== null || flipper.signalCode !== null ? resolve(null) : flipper.once('exit', resolve)));
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('the oracles can fail: a chmod or a new entry shows in the snapshot, a killed sentinel is not running', async () => {
    const victim = victimDir();
    const before = snapshot(victim);
    fs.chmodSync(victim, 0o700);
    expect(snapshot(victim)).not.toEqual(before);
    fs.chmodSync(victim, 0o755);
    fs.writeFileSync(path.join(victim, 'x.lock'), '');
    expect(snapshot(victim)).not.toEqual(before);
    const sentinels = new Sentinels(deadPid(), attacker);
    try {
      await sentinels.ready();
      expect(sentinels.allRunning()).toBe(true);
      sentinels.children[0]!.kill('SIGKILL');
      await waitUntil(() => !sentinels.allRunning(), 'the killed sentinel to be seen dead');
    } finally {
      await sentinels.dispose();
    }
  });
});
