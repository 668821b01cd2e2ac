/**
 * Issue 15 item 5: an unprivileged user in a cgroup subtree delegated to it (what systemd's
 * Delegate=yes gives) gets cgroup containment in 'auto' mode; in a cgroup it does not own, or one
 * whose cgroup.procs it may not write (so no process can be moved below it), the process-group
 * fallback with a reason that says why. Runs only as root: it makes the user and the subtrees
 * (below this process's own cgroup), moves a shell into one and drops to the user there.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';
import { cgroupOf } from '../../supervisor/platform/procfs.js';
import { isReaped, see, waitForFile, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { FIXTURES } from '../helpers/runtime.js';
import { BOUNDED } from '../helpers/bounded.js';

const USER = 'heph-deleg';
const DIST = path.resolve(import.meta.dirname, '../../dist/src/index.js');

function commandExists(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function userIds(): { uid: number; gid: number } {
  try {
    execFileSync('id', ['-u', USER], { stdio: 'ignore' });
  } catch {
    execFileSync('useradd', ['--system', '--no-create-home', USER], BOUNDED);
  }
  const uid = Number(execFileSync('id', ['-u', USER], { encoding: 'utf8' }));
  const gid = Number(execFileSync('id', ['-g', USER], { encoding: 'utf8' }));
  return { uid, gid };
}

/** The argv prefix that runs a command as the user, with no capabilities and no supplementary groups. */
function asUser(): string[] {
  return ['setpriv', `--reuid=${USER}`, `--regid=${USER}`, '--clear-groups', '--inh-caps=-all'];
}

function skipReason(): string | null {
  if (process.getuid?.() !== 0) return 'needs root (it makes a user and delegates a cgroup subtree to it)';
  if (!commandExists('setpriv') || !commandExists('useradd')) return 'needs setpriv and useradd';
  const own = findOwnCgroupDir();
  if (!own.ok) return own.reason;
  if (!fs.existsSync(DIST)) return 'dist/ is not built (npm run build:ts)';
  return null;
}

const skip = skipReason();
if (skip) console.warn(`[heph-jobs tests] delegated-cgroup tests skipped: ${skip}`);

/** The cgroup directory of a process, on the mount our own cgroup is on. */
function cgroupDirOf(pid: number, mount: string, own: string): string {
  const relative = cgroupOf(pid);
  if (relative === null) throw new Error(`process ${pid} is gone`);
  return path.join(mount, path.relative(own, relative));
}

function procsOf(dir: string): number[] {
  const text = fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim();
  return text === '' ? [] : text.split('\n').map(Number);
}

/** Real, effective, saved and filesystem uid of a process, from /proc/PID/status. */
function uidsOf(pid: number): number[] {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('Uid:'))!;
  return line.split(/\s+/).slice(1, 5).map(Number);
}

/** Kills everything in a cgroup tree (only what this test put there) and removes it, deepest first. */
async function destroyCgroup(dir: string): Promise<void> {
  if (!fs.existsSync(dir)) return;
  fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
  await waitUntil(() => fs.readFileSync(path.join(dir, 'cgroup.events'), 'utf8').includes('populated 0'), `${dir} to empty`);
  const remove = (target: string): void => {
    for (const entry of fs.readdirSync(target, { withFileTypes: true })) if (entry.isDirectory()) remove(path.join(target, entry.name));
    fs.rmdirSync(target);
  };
  remove(dir);
}

/** The fixture host, started as the user inside `cgroup`, driven one command a line. */
class DelegatedHost {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private waiting: ((line: string) => void) | null = null;
  stderr = '';

  constructor(cgroup: string, pidsDir: string) {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, PIDS_DIR: pidsDir, HOME: '/nonexistent' };
    // The shell moves itself into the subtree while still root, then becomes the user: everything
    // the runtime starts is born there.
    const host = path.join(FIXTURES, 'delegated-host.mjs');
    const script = `echo $$ > ${cgroup}/cgroup.procs && exec ${asUser().join(' ')} ${process.execPath} ${host}`;
    this.child = spawn('sh', ['-c', script], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr!.on('data', (chunk) => (this.stderr += chunk));
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (this.waiting) {
        const resolve = this.waiting;
        this.waiting = null;
        resolve(line);
      } else this.lines.push(line);
    });
  }

  /** Sends a command and returns the host's one-line JSON answer. */
  async send(command: string): Promise<Record<string, any>> {
    const answer = new Promise<string>((resolve, reject) => {
      const queued = this.lines.shift();
      if (queued !== undefined) return resolve(queued);
      this.waiting = resolve;
      this.child.once('exit', (code) => reject(new Error(`host exited (${code}) before answering ${command}: ${this.stderr}`)));
    });
    this.child.stdin!.write(`${command}\n`);
    const parsed = JSON.parse(await answer);
    if (parsed.error) throw new Error(`host: ${parsed.error}\n${this.stderr}`);
    return parsed;
  }

  exited(): Promise<number | null> {
    if (this.child.exitCode !== null) return Promise.resolve(this.child.exitCode);
    return new Promise((resolve) => this.child.once('exit', resolve));
  }
}

describe.skipIf(skip !== null)('an unprivileged user with a delegated cgroup subtree', () => {
  let ids: { uid: number; gid: number };
  let mount: string;
  let own: string;
  let ownDir: string;
  const cgroups: string[] = [];
  const temps: string[] = [];
  const hosts: DelegatedHost[] = [];
  let lockDirExisted = false;
  const lockRoot = () => path.join(os.tmpdir(), `heph-jobs-${ids.uid}`);

  beforeAll(() => {
    ids = userIds();
    const probe = findOwnCgroupDir();
    if (!probe.ok) throw new Error(probe.reason);
    own = cgroupOf('self')!;
    ownDir = probe.parent;
    mount = ownDir.slice(0, ownDir.length - (own === '/' ? 0 : own.length));
    lockDirExisted = fs.existsSync(lockRoot());
    // The user must be able to read the built package and the fixtures: the test runs them as it.
    execFileSync(asUser()[0], [...asUser().slice(1), 'test', '-r', DIST], BOUNDED);
  });

  afterEach(async () => {
    for (const host of hosts.splice(0)) host.child.stdin!.end();
    for (const dir of cgroups.splice(0)) await destroyCgroup(dir);
    for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  afterAll(() => {
    if (!lockDirExisted && ids) fs.rmSync(lockRoot(), { recursive: true, force: true });
  });

  /** A subtree below our own cgroup; `owned` chowns what systemd's Delegate=yes chowns. */
  function subtree(name: string, owned: 'delegated' | 'directory-only' | 'none'): string {
    const dir = path.join(ownDir, `heph-deleg-${name}-${process.pid}`);
    fs.mkdirSync(dir);
    cgroups.push(dir);
    const files = owned === 'delegated' ? ['', 'cgroup.procs', 'cgroup.subtree_control', 'cgroup.threads'] : owned === 'directory-only' ? [''] : [];
    for (const file of files) fs.chownSync(path.join(dir, file), ids.uid, ids.gid);
    return dir;
  }

  function pidsDir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-deleg-pids-'));
    fs.chownSync(dir, ids.uid, ids.gid);
    temps.push(dir);
    return dir;
  }

  function startHost(cgroup: string, pids: string): DelegatedHost {
    const host = new DelegatedHost(cgroup, pids);
    hosts.push(host);
    return host;
  }

  async function escapers(pids: string): Promise<SeenProcess[]> {
    return Promise.all(['setsid', 'nohup', 'pgrp'].map(async (name) => see(Number(await waitForFile(path.join(pids, name))))));
  }

  it('gets cgroup containment: the job and its escapers are in the job cgroup, and killing it empties and removes it', async () => {
    const cgroup = subtree('ok', 'delegated');
    const pids = pidsDir();
    const host = startHost(cgroup, pids);
    const started = await host.send('start');

    expect(started.uid).toBe(ids.uid);
    expect(started.containment.mode).toBe('cgroup');
    expect(started.containment.cgroupRoot.startsWith(`${cgroup}/`)).toBe(true);
    expect(started.containment.reason).toContain(cgroup);
    expect(started.containment.reason).toContain(`delegated to uid ${ids.uid}`);

    // The supervisor runs as the user (all four uids), in the delegated subtree.
    const supervisor = see(started.supervisorPid);
    expect(uidsOf(supervisor.pid)).toEqual([ids.uid, ids.uid, ids.uid, ids.uid]);
    expect(cgroupDirOf(supervisor.pid, mount, own)).toBe(cgroup);

    // The leader and every escaper are in the job's cgroup (kernel truth: cgroup.procs).
    const leader = see(started.job.pid);
    const jobCgroup = cgroupDirOf(leader.pid, mount, own);
    expect(path.dirname(jobCgroup)).toBe(started.containment.cgroupRoot);
    const escaped = await escapers(pids);
    const members = procsOf(jobCgroup);
    for (const process of [leader, ...escaped]) expect(members).toContain(process.pid);

    // The lock directory works for the user with XDG_RUNTIME_DIR unset (the default, under tmpdir).
    expect(await host.send('lock')).toEqual({ state: 'exited', exitCode: 0 });
    expect(fs.statSync(lockRoot()).uid).toBe(ids.uid);

    const killed = await host.send('kill');
    expect(killed.cleanedUp).toBe(true);
    await waitUntil(() => !fs.existsSync(jobCgroup), `${jobCgroup} to be removed`);
    for (const process of [leader, ...escaped]) expect(isReaped(process)).toBe(true);

    expect(await host.send('close')).toEqual({ closed: true });
    expect(await host.exited()).toBe(0);
    expect(isReaped(supervisor)).toBe(true);
    // Nothing of ours is left in the subtree: no process, no heph-jobs-* cgroup.
    expect(procsOf(cgroup)).toEqual([]);
    expect(fs.readdirSync(cgroup).filter((name) => name.startsWith('heph-jobs-'))).toEqual([]);
  });

  it('uses the delegated subtree above its own cgroup when that leaf is not its own (job cgroups are siblings of it)', async () => {
    const cgroup = subtree('leaf', 'delegated');
    // A leaf made by root inside the delegated subtree, as systemd's DelegateSubgroup= may leave one.
    const leaf = path.join(cgroup, 'leaf');
    fs.mkdirSync(leaf);
    const pids = pidsDir();
    const host = startHost(leaf, pids);
    const started = await host.send('start');
    expect(started.containment.mode).toBe('cgroup');
    expect(path.dirname(started.containment.cgroupRoot)).toBe(cgroup);
    expect(started.containment.reason).toContain(`this process is in ${leaf}, which it may not write`);
    expect(cgroupDirOf(started.supervisorPid, mount, own)).toBe(leaf);
    const jobCgroup = cgroupDirOf(started.job.pid, mount, own);
    expect(path.dirname(jobCgroup)).toBe(started.containment.cgroupRoot);
    const escaped = await escapers(pids);
    expect(procsOf(jobCgroup)).toEqual(expect.arrayContaining(escaped.map((process) => process.pid)));
    expect((await host.send('kill')).cleanedUp).toBe(true);
    await waitUntil(() => !fs.existsSync(jobCgroup), `${jobCgroup} to be removed`);
    for (const process of escaped) expect(isReaped(process)).toBe(true);
    expect(await host.send('close')).toEqual({ closed: true });
    expect(fs.readdirSync(cgroup).filter((name) => name.startsWith('heph-jobs-'))).toEqual([]);
  });

  it('falls back to process groups in a cgroup it does not own, and says why', async () => {
    const cgroup = subtree('notowned', 'none');
    const pids = pidsDir();
    const host = startHost(cgroup, pids);
    const started = await host.send('start');
    expect(started.containment.mode).toBe('process-group');
    expect(started.containment.reason).toContain(cgroup);
    expect(started.containment.reason).toContain(`not writable by uid ${ids.uid}`);
    // The fallback still contains the job: it runs, and job_kill stops it and its escapers.
    const escaped = await escapers(pids);
    expect(cgroupDirOf(started.job.pid, mount, own)).toBe(cgroup);
    expect((await host.send('kill')).cleanedUp).toBe(true);
    for (const process of escaped) expect(isReaped(process)).toBe(true);
    expect(await host.send('close')).toEqual({ closed: true });
  });

  it('falls back to process groups when it owns the directory but not its cgroup.procs (no process can be moved below it)', async () => {
    const cgroup = subtree('dironly', 'directory-only');
    const pids = pidsDir();
    const host = startHost(cgroup, pids);
    const started = await host.send('start');
    expect(started.containment.mode).toBe('process-group');
    expect(started.containment.reason).toContain(path.join(cgroup, 'cgroup.procs'));
    expect(started.job.state).toBe('running');
    const escaped = await escapers(pids);
    expect((await host.send('kill')).cleanedUp).toBe(true);
    for (const process of escaped) expect(isReaped(process)).toBe(true);
    expect(await host.send('close')).toEqual({ closed: true });
  });
});
