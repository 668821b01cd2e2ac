/**
 * Issue 25: the cgroup v2 path of job limits. This machine's v2 tree has no controllers, so the
 * files written and read are checked against a directory laid out like a v2 job cgroup (the
 * README says which path was verified where).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JobLimitHold } from '../../supervisor/limits/job-limits.js';
import { enableV2Controllers, readV2Limits, v2ControllersOf } from '../../supervisor/limits/v2-controllers.js';
import type { ContainmentStrategy, JobIdentity } from '../../supervisor/containment/index.js';
import { limitLines } from '../../src/wording/limits.js';

const MB = 1 << 20;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A directory laid out like a v2 cgroup: `cgroup.controllers` listing `controllers`, and the files they bring. */
function fakeCgroup(controllers: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-fake-cgroup-'));
  dirs.push(dir);
  fs.writeFileSync(path.join(dir, 'cgroup.controllers'), `${controllers.join(' ')}\n`);
  fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), '');
  return dir;
}

const noMembers = { members: () => [] } as unknown as ContainmentStrategy;
const identity = { job: 0, pid: 1, marker: 'HEPH_JOB=x:0', cgroup: null } as JobIdentity;

describe('limits through cgroup v2 controllers', () => {
  it('writes memory.max, memory.high below it, memory.oom.group, pids.max and cpu.max into a job cgroup that has the controllers', () => {
    const dir = fakeCgroup(['cpuset', 'cpu', 'io', 'memory', 'pids']);
    const hold = new JobLimitHold({ memoryBytes: 512 * MB, processes: 64, cpuMillis: 1500 }, 0, dir);
    expect(hold.joinGroups).toEqual([]);
    const read = (file: string) => fs.readFileSync(path.join(dir, file), 'utf8');
    expect(read('memory.max')).toBe(String(512 * MB));
    expect(Number(read('memory.high'))).toBeLessThan(512 * MB);
    expect(Number(read('memory.high'))).toBeGreaterThan(400 * MB);
    expect(read('memory.oom.group')).toBe('1');
    expect(read('pids.max')).toBe('64');
    expect(read('cpu.max')).toBe('150000 100000');
    expect(hold.facts().by).toEqual({ memory: 'cgroup-v2', processes: 'cgroup-v2', cpu: 'cgroup-v2' });
  });

  it('reads the kernel’s group OOM kill as the memory limit reached, with the peak, refused forks and throttled time', () => {
    const dir = fakeCgroup(['memory', 'pids', 'cpu']);
    const hold = new JobLimitHold({ memoryBytes: 128 * MB, processes: 10, cpuMillis: 500 }, 0, dir);
    hold.watch(noMembers, identity, () => undefined);
    fs.writeFileSync(path.join(dir, 'memory.events'), 'low 0\nhigh 12\nmax 40\noom 1\noom_kill 1\noom_group_kill 1\n');
    fs.writeFileSync(path.join(dir, 'memory.peak'), `${130 * MB}\n`);
    fs.writeFileSync(path.join(dir, 'pids.events'), 'max 7\n');
    fs.writeFileSync(path.join(dir, 'cpu.stat'), 'usage_usec 900000\nnr_periods 20\nnr_throttled 9\nthrottled_usec 450000\n');
    // The job's processes are gone: the last look, before its cgroup is removed, finds the kernel's stop.
    hold.stop(noMembers, identity);
    expect(hold.facts()).toMatchObject({ reached: 'memory', peakMemoryBytes: 130 * MB, forkFailures: 7, throttledMs: 450 });
  });

  it('says how often memory.high slowed a running job, and how much it stalled, in its limits line', () => {
    const dir = fakeCgroup(['memory']);
    const hold = new JobLimitHold({ memoryBytes: 512 * MB, processes: null, cpuMillis: null }, 0, dir);
    fs.writeFileSync(path.join(dir, 'memory.events'), 'low 0\nhigh 12\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n');
    fs.writeFileSync(path.join(dir, 'memory.pressure'), 'some avg10=35.20 avg60=10.01 avg300=2.00 total=812345\nfull avg10=20.00 avg60=5.00 avg300=1.00 total=412345\n');
    fs.writeFileSync(path.join(dir, 'memory.peak'), `${470 * MB}\n`);
    hold.watch(noMembers, identity, () => undefined);
    const facts = hold.facts();
    hold.stop();
    expect(facts).toMatchObject({ reached: null, slowedAtMemoryHigh: 12, memoryPressure: 35.2 });
    expect(limitLines(facts, 'running')).toEqual(['limits: memory 512 MB (cgroup); peak 470 MB, slowed 12 times near its memory limit, stalled 35.2% of the last 10 s']);
    // Negative control: never past memory.high, nothing said of it.
    fs.writeFileSync(path.join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n');
    const calm = new JobLimitHold({ memoryBytes: 512 * MB, processes: null, cpuMillis: null }, 0, dir);
    calm.watch(noMembers, identity, () => undefined);
    const calmFacts = calm.facts();
    calm.stop();
    expect(calmFacts.slowedAtMemoryHigh).toBe(0);
    expect(limitLines(calmFacts, 'running')[0]).not.toContain('slowed');
  });

  it('negative control: no group OOM kill, no limit reached; a cgroup without the controllers gets none of the files', () => {
    const dir = fakeCgroup(['memory', 'pids', 'cpu']);
    fs.writeFileSync(path.join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n');
    expect(readV2Limits(dir)).toMatchObject({ oomKilled: false, slowedAtMemoryHigh: 0 });
    const bare = fakeCgroup([]);
    const hold = new JobLimitHold({ memoryBytes: 128 * MB, processes: null, cpuMillis: null }, 0, bare);
    expect(fs.existsSync(path.join(bare, 'memory.max'))).toBe(false);
    expect(hold.facts().by.memory).not.toBe('cgroup-v2');
    hold.release();
  });

  it('enables for the job cgroups the controllers the subtree was delegated, and only those', () => {
    const subtree = fakeCgroup(['cpuset', 'memory', 'pids']);
    expect([...enableV2Controllers(subtree)].sort()).toEqual(['memory', 'pids']);
    expect(v2ControllersOf(subtree)).toEqual(new Set(['cpuset', 'memory', 'pids']));
  });
});
