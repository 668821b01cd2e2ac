/**
 * A limited job's cgroup v1 groups (`heph-jobs-<pid>-<start>-pidns<inode>-job<N>`, one per
 * controller, beside the supervisor's own group) outlive a SIGKILLed supervisor. The cleanup after
 * it (the runtime's `cleanup-lost`, or the next supervisor's start sweep when the runtime died too)
 * removes them once empty; a live instance's groups, another pid namespace's, and a dead instance's
 * group that still holds a process (of no job: nothing there is killed) are left alone.
 * Kernel truth: the group directories, /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findV1Hierarchies } from '../../supervisor/limits/v1-groups.js';
import { subtreeName } from '../../supervisor/names.js';
import { isReaped, isRunning, see, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime } from '../helpers/runtime.js';
import { signalIfSame } from '../helpers/signal.js';
import { firstLine, killTogether } from '../helpers/host.js';
import { killSupervisor, settledLostCleanups, supervisorHello, waitFor } from '../../src/testing.js';
import type { JobRuntime } from '../../src/index.js';

const MB = 1 << 20;
const LIMITS = { memoryBytes: 256 * MB, processes: 50 };
const ROOT = path.resolve(import.meta.dirname, '../..');

/** Our group in each v1 hierarchy a supervisor started from here makes its jobs' groups in. */
const v1 = findV1Hierarchies(`heph-test-probe-${process.pid}`);
const HIERARCHIES = [v1.memory, v1.pids].filter((dir): dir is string => dir !== undefined);
const noV1 = v1.memory === undefined || v1.pids === undefined ? 'no writable cgroup v1 memory and pids hierarchies (findV1Hierarchies)' : null;
if (noV1) console.warn(`[heph-jobs tests] limit-groups-sweep skipped: ${noV1}`);

/** Our own group in the v1 memory hierarchy, as /proc/self/cgroup names it. */
function ownMemoryGroup(): string {
  const line = fs.readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((entry) => entry.split(':')[1]?.split(',').includes('memory'));
  return path.join('/sys/fs/cgroup/memory', line!.split(':')[2]!);
}

/** The v1 groups of supervisor instance `instance` that exist now, in every hierarchy. */
function groupsOf(instance: { pid: number; start: string }): string[] {
  const prefix = `${subtreeName(instance)}-job`;
  return HIERARCHIES.flatMap((dir) => fs.readdirSync(dir).filter((name) => name.startsWith(prefix)).map((name) => path.join(dir, name)));
}

function procsOf(group: string): number[] {
  return fs.readFileSync(path.join(group, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
}

/** A limited job's groups: one per hierarchy, under our own memory group, its leader in each. */
function expectGroups(instance: { pid: number; start: string }, leader: number): string[] {
  const groups = groupsOf(instance);
  expect(groups).toHaveLength(HIERARCHIES.length);
  expect(groups.some((group) => path.dirname(group) === ownMemoryGroup())).toBe(true);
  for (const group of groups) expect(procsOf(group)).toContain(leader);
  return groups;
}

/** rmdir (a cgroup's control files go with it); already gone is fine. */
function removeGroup(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** A runtime in its own process running one limited `sleep`, to be killed together with its supervisor. */
async function limitedHost(mode: string): Promise<{ host: ChildProcess; supervisorPid: number; leader: number }> {
  const script = `
    import { JobRuntime } from ${JSON.stringify(path.join(ROOT, 'dist/src/index.js'))};
    const runtime = await JobRuntime.start({ containment: ${JSON.stringify(mode)}, settleMs: 0 });
    const job = await runtime.background({ command: 'exec sleep 1000', limits: ${JSON.stringify(LIMITS)} });
    const caps = await runtime.capabilities();
    process.stdout.write(JSON.stringify({ supervisorPid: caps.supervisorPid, leader: job.pid }) + '\\n');
    setInterval(() => {}, 1 << 30);`;
  const host = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await firstLine(host, 'limited host');
  return { host, ...(JSON.parse(line) as { supervisorPid: number; leader: number }) };
}

async function liveLimitedJob(runtime: JobRuntime): Promise<{ id: number; leader: SeenProcess; groups: string[] }> {
  const job = await runtime.background({ command: 'exec sleep 1000', limits: LIMITS });
  const groups = expectGroups(supervisorHello(runtime)!.instance, job.pid!);
  return { id: job.id, leader: see(job.pid!), groups };
}

describe.each(modeRows())('v1 limit groups of a dead supervisor (%s)', (mode, skipMode) => {
  it.skipIf(skipMode || noV1 !== null)('the cleanup after a crashed supervisor removes its jobs\' groups; a live runtime\'s stay', async () => {
    const live = await startRuntime(mode);
    const liveJob = await liveLimitedJob(live);

    const runtime = await startRuntime(mode);
    const job = await liveLimitedJob(runtime);
    killSupervisor(runtime, 'SIGKILL');
    expect(await waitFor(runtime, () => runtime.list().find((entry) => entry.id === job.id)?.state === 'lost', 10_000)).toBe(true);
    await settledLostCleanups(runtime);
    await waitUntil(() => isReaped(job.leader), 'the lost job\'s leader reaped');
    await waitUntil(() => job.groups.every((group) => !fs.existsSync(group)), 'the dead instance\'s v1 groups removed', 10_000, () => job.groups.filter((group) => fs.existsSync(group)));

    // The negative control: the live runtime's job and its groups are untouched.
    expect(isRunning(liveJob.leader.pid) && !isReaped(liveJob.leader)).toBe(true);
    expect((await live.status(liveJob.id)).state).toBe('running');
    for (const group of liveJob.groups) expect(procsOf(group)).toContain(liveJob.leader.pid);
  });

  it.skipIf(skipMode || noV1 !== null)('a runtime and supervisor killed together: the next supervisor\'s sweep removes the groups, nothing of the job left', async () => {
    const live = await startRuntime(mode);
    const liveJob = await liveLimitedJob(live);

    const { host, supervisorPid, leader } = await limitedHost(mode);
    const supervisor = see(supervisorPid);
    const job = see(leader);
    try {
      const groups = expectGroups(supervisor, leader);
      await killTogether(host, supervisor);
      // Its job ended too (killed here): no marker is left to find, only the groups name the dead
      // instance (and, in cgroup mode, its empty v2 subtree).
      signalIfSame(job, 'SIGKILL');
      await waitUntil(() => isReaped(job), 'the job reaped');

      const next = await startRuntime(mode);
      await next.capabilities();
      await waitUntil(() => groups.every((group) => !fs.existsSync(group)), 'the dead instance\'s v1 groups removed', 10_000, () => groups.filter((group) => fs.existsSync(group)));

      expect(isRunning(liveJob.leader.pid) && !isReaped(liveJob.leader)).toBe(true);
      for (const group of liveJob.groups) expect(procsOf(group)).toContain(liveJob.leader.pid);
    } finally {
      host.kill('SIGKILL');
      signalIfSame(job, 'SIGKILL');
    }
  });
});

describe('v1 limit groups the sweep must leave', () => {
  it.skipIf(noV1 !== null)('a dead instance\'s group that still holds a process, and another pid namespace\'s, are left; the process lives', async () => {
    // A dead instance: a process that has exited, named by its pid and start time.
    const gone = spawn('sleep', ['0.05'], { stdio: 'ignore' });
    const dead = see(gone.pid!);
    await new Promise((resolve) => gone.once('exit', resolve));
    await waitUntil(() => isReaped(dead), 'the dead instance reaped');
    const empty = path.join(v1.memory!, `${subtreeName(dead)}-job1`);
    const busy = path.join(v1.memory!, `${subtreeName(dead)}-job2`);
    const otherNamespace = path.join(v1.memory!, `heph-jobs-${dead.pid}-${dead.start}-pidns1-job1`);
    const made = [empty, busy, otherNamespace];
    const stranger = spawn('sleep', ['1000'], { stdio: 'ignore' });
    const proc = see(stranger.pid!);
    try {
      for (const dir of made) fs.mkdirSync(dir);
      fs.writeFileSync(path.join(busy, 'cgroup.procs'), String(proc.pid));
      expect(procsOf(busy)).toEqual([proc.pid]);

      const next = await startRuntime('process-group');
      await next.capabilities();
      // The dead instance's groups are tried in one pass: once the empty one is gone, so was the try.
      await waitUntil(() => !fs.existsSync(empty), 'the dead instance\'s empty group removed');
      expect(fs.existsSync(busy)).toBe(true);
      expect(procsOf(busy)).toEqual([proc.pid]);
      expect(isRunning(proc.pid) && !isReaped(proc)).toBe(true);
      expect(fs.existsSync(otherNamespace)).toBe(true);
    } finally {
      signalIfSame(proc, 'SIGKILL');
      await waitUntil(() => isReaped(proc), 'the stranger reaped');
      for (const dir of made) removeGroup(dir);
    }
  });
});
