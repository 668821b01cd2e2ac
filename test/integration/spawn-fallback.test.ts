/**
 * The addon's fallback on a kernel without clone3: a seccomp filter (test/fixtures/without-clone3.py)
 * makes clone3 fail with ENOSYS for a process that spawns through the addon with forceFork off
 * (test/fixtures/spawn-report.mjs). The spawn must notice by itself, take the fork path for that job
 * and every later one, and start each leader as clean as the clone3 path does.
 *
 * A file of its own: these tests start processes with child_process, which the addon's reaper (started
 * in spawn.test.ts's worker) would reap from under libuv.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';
import { cgroupOf } from '../../supervisor/platform/procfs.js';
import { waitUntil } from '../helpers/kernel.js';
import { cgroupUnavailable } from '../helpers/modes.js';
import { FIXTURES } from '../helpers/runtime.js';
import { parseSelfReport, SELF_REPORT } from '../helpers/self-report.js';
import { BOUNDED } from '../helpers/bounded.js';

interface Job {
  command: string;
  cgroup?: string;
  cwd?: string;
}
type Result = { method: 'clone3' | 'fork'; output: string; code: number | null } | { error: { code: string; syscall: string; path?: string } };

function spawnReport(jobs: Job[], withoutClone3: boolean): Result[] {
  const node = [process.execPath, path.join(FIXTURES, 'spawn-report.mjs'), JSON.stringify(jobs)];
  const command = withoutClone3 ? ['python3', path.join(FIXTURES, 'without-clone3.py'), ...node] : node;
  return JSON.parse(execFileSync(command[0]!, command.slice(1), { ...BOUNDED, encoding: 'utf8' })) as Result[];
}

const probe = findOwnCgroupDir();
const cgroupRoot = cgroupUnavailable === null && probe.ok ? path.join(probe.parent, `heph-spawn-fallback-${process.pid}`) : null;
const made: string[] = [];
function newCgroup(name: string): string {
  if (made.length === 0) fs.mkdirSync(cgroupRoot!);
  const dir = path.join(cgroupRoot!, name);
  fs.mkdirSync(dir);
  made.push(dir);
  return dir;
}

afterAll(async () => {
  // rmdir says EBUSY for a moment after the last process left; the deadline only turns a hang into a failure.
  for (const dir of [...made.reverse(), ...(made.length ? [cgroupRoot!] : [])]) {
    await waitUntil(() => {
      try {
        fs.rmdirSync(dir);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EBUSY') return false;
        throw error;
      }
    }, `cgroup ${dir} removed`);
  }
});

describe('spawn on a kernel without clone3', () => {
  it('falls back to fork by itself, for that job and every later one, with a leader as clean as clone3 starts it', () => {
    const cgroup = cgroupRoot ? newCgroup('job') : undefined;
    const results = spawnReport(
      [{ command: SELF_REPORT, cgroup }, { command: 'exit 3' }, { command: 'true', cwd: '/nonexistent-heph-cwd' }, { command: 'exit 4' }],
      true,
    );
    expect(results.map((result) => ('method' in result ? result.method : result.error.syscall))).toEqual(['fork', 'fork', 'chdir', 'fork']);
    const [first, second, third, fourth] = results as [Result & { output: string }, Result, Result, Result];
    const self = parseSelfReport(first.output);
    expect(self).toMatchObject({ sigBlk: 0n, sigIgn: 0n, fds: [0, 1, 2] });
    expect(self.session).toBe(self.pid);
    if (cgroup) expect(self.cgroup).toBe(`0::${path.join(cgroupOf('self')!, path.relative(probe.ok ? probe.parent : '/', cgroup))}`);
    expect(second).toMatchObject({ code: 3 });
    expect(third).toEqual({ error: { code: 'ENOENT', syscall: 'chdir', path: '/nonexistent-heph-cwd' } });
    expect(fourth).toMatchObject({ code: 4 });
  });

  it('negative control: the same process without the filter spawns through clone3', () => {
    const results = spawnReport([{ command: 'exit 3' }], false);
    expect(results).toEqual([{ method: 'clone3', output: '', code: 3 }]);
  });
});
