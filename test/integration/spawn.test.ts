/**
 * The addon's spawn on both of its paths: clone3 with CLONE_VM | CLONE_VFORK on a child stack of
 * its own (the normal one, `method: 'clone3'`), and fork with a write to cgroup.procs (`forceFork`,
 * the fallback for kernels without clone3 or CLONE_INTO_CGROUP). On each: what the job leader finds
 * when its first command runs (no blocked or ignored signal, fds 0-2 only, its own session and
 * process group, its cgroup), how a start that fails before or at execve is reported (the failing
 * step, the errno, the path), and that nothing is left behind: no descriptor, no child, no reaper
 * report, no change to the caller's signal mask.
 *
 * Runs in the test worker, which has no children of its own: the addon's reaper is started here so
 * the jobs spawned are reaped and reported as in the supervisor (as test/unit/native-guards does).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { native, type NativeSpawnOptions, type NativeSpawnResult, type ReapedChild } from '../../supervisor/native.js';
import { addonReaper, spawnOptionsFrom } from '../helpers/addon-reaper.js';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';
import { cgroupOf, listProcesses, processStartTime } from '../../supervisor/platform/procfs.js';
import { cgroupUnavailable } from '../helpers/modes.js';
import { parseSelfReport, SELF_REPORT, statusMask } from '../helpers/self-report.js';

const { SIGKILL } = os.constants.signals;

// ---- reaping ----------------------------------------------------------------------------------------

const { reports, reaped, startReports } = addonReaper();
const options = spawnOptionsFrom({ command: 'exit 0' });

/** Everything a job wrote to its (merged) output pipe, read to EOF: the job has ended by then. */
function readToEnd(fd: number): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(64 * 1024);
  for (;;) {
    const got = fs.readSync(fd, buffer);
    if (got === 0) return Buffer.concat(chunks).toString();
    chunks.push(Buffer.from(buffer.subarray(0, got)));
  }
}

function closeAll(result: NativeSpawnResult): void {
  for (const fd of [result.pidfd, result.stdin, result.stdout, result.stderr]) if (fd >= 0) native.closeFd(fd);
}

/** Runs a command to its end; its output, exit report and spawn result. */
async function run(overrides: Partial<NativeSpawnOptions>): Promise<{ output: string; exit: ReapedChild; result: NativeSpawnResult }> {
  const spawnOptions = options(overrides);
  const result = native.spawn(spawnOptions);
  try {
    const output = readToEnd(result.stdout);
    return { output, exit: await reaped(spawnOptions.token), result };
  } finally {
    closeAll(result);
  }
}

/** The error a spawn throws. */
function spawnError(overrides: Partial<NativeSpawnOptions>): NodeJS.ErrnoException & { token: number } {
  const spawnOptions = options(overrides);
  try {
    const result = native.spawn(spawnOptions);
    closeAll(result);
  } catch (error) {
    return Object.assign(error as NodeJS.ErrnoException, { token: spawnOptions.token });
  }
  throw new Error(`spawn of ${JSON.stringify(overrides)} succeeded; a failure was expected`);
}

// ---- oracles -------------------------------------------------------------------------------------

const openFdCount = () => fs.readdirSync('/proc/self/fd').length;
const ourChildren = () => listProcesses().filter((entry) => entry.ppid === process.pid).map((entry) => entry.pid);
/** The calling thread's own signal mask (the spawn blocks every signal around the clone). */
const callerMask = () => statusMask(fs.readFileSync('/proc/thread-self/status', 'utf8'), 'SigBlk');
/** Taken before this file's first spawn, so a spawn that left every signal blocked shows. */
const maskBeforeAnySpawn = callerMask();

// ---- set-up -------------------------------------------------------------------------------------

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-spawn-'));
const notExecutable = path.join(scratch, 'not-executable');
fs.writeFileSync(notExecutable, '#!/bin/sh\n', { mode: 0o644 });

// Job cgroups go under a cgroup of this test's own, beside the worker's.
const cgroupProbe = findOwnCgroupDir();
const cgroupRoot = cgroupUnavailable === null && cgroupProbe.ok ? path.join(cgroupProbe.parent, `heph-spawn-test-${process.pid}`) : null;
let cgroupSeq = 0;
function newCgroup(): string {
  const dir = path.join(cgroupRoot!, `job-${cgroupSeq++}`);
  native.cgroupCreate(dir);
  return dir;
}
/** The cgroup's path as /proc/PID/cgroup names it ("0::" + this). */
const cgroupName = (dir: string) => path.join(cgroupOf('self')!, path.relative(cgroupProbe.ok ? cgroupProbe.parent : '/', dir));
const cgroupMembers = (dir: string) => fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);

beforeAll(() => {
  // The reaper waits for any child: with none of the worker's own around, it takes only ours.
  expect(ourChildren()).toEqual([]);
  startReports();
  if (cgroupRoot) native.cgroupCreate(cgroupRoot);
});

afterAll(() => {
  if (cgroupRoot) {
    for (const entry of fs.readdirSync(cgroupRoot, { withFileTypes: true })) if (entry.isDirectory()) native.cgroupRemove(path.join(cgroupRoot, entry.name));
    native.cgroupRemove(cgroupRoot);
  }
  fs.rmSync(scratch, { recursive: true, force: true });
});

// ---- the two paths --------------------------------------------------------------------------------

describe.each([
  { method: 'clone3', forceFork: false },
  { method: 'fork', forceFork: true },
] as const)('spawn through $method', ({ method, forceFork }) => {
  it('starts the leader with no blocked or ignored signal, fds 0-2 only, in a session and process group of its own', async () => {
    // The worker ignores SIGPIPE (Node does) and is no session leader: none of that may carry over.
    const { output, exit, result } = await run({ command: SELF_REPORT, forceFork });
    expect(result.method).toBe(method);
    expect(exit).toMatchObject({ code: 0, signal: 0 });
    const self = parseSelfReport(output);
    expect(self).toMatchObject({ sigBlk: 0n, sigIgn: 0n, fds: [0, 1, 2], pid: result.pid, ppid: process.pid, pgrp: result.pid, session: result.pid });
  });

  it.skipIf(cgroupRoot === null)('starts the leader inside the cgroup given', async () => {
    const dir = newCgroup();
    const { output, result } = await run({ command: SELF_REPORT, cgroup: dir, forceFork });
    expect(result.method).toBe(method);
    expect(parseSelfReport(output).cgroup).toBe(`0::${cgroupName(dir)}`);
    expect(native.cgroupRemove(dir)).toBe(true);
  });

  it('reports a start that fails at chdir or execve exactly, and leaves no descriptor, child or reaper report behind', async () => {
    const fdsBefore = openFdCount();
    const children = ourChildren();
    const failures = [
      { overrides: { cwd: '/nonexistent-heph-cwd' }, expected: { code: 'ENOENT', errno: 2, syscall: 'chdir', path: '/nonexistent-heph-cwd' } },
      { overrides: { cwd: notExecutable }, expected: { code: 'ENOTDIR', errno: 20, syscall: 'chdir', path: notExecutable } },
      { overrides: { shell: '/nonexistent-heph/sh' }, expected: { code: 'ENOENT', errno: 2, syscall: 'execve', path: '/nonexistent-heph/sh' } },
      { overrides: { shell: notExecutable }, expected: { code: 'EACCES', errno: 13, syscall: 'execve', path: notExecutable } },
      { overrides: { shell: scratch }, expected: { code: 'EACCES', errno: 13, syscall: 'execve', path: scratch } },
    ];
    const tokens: number[] = [];
    for (const { overrides, expected } of failures) {
      const error = spawnError({ ...overrides, forceFork });
      expect(error).toMatchObject(expected);
      expect(error.message).toMatch(new RegExp(`^${expected.syscall} failed: .+ \\(${expected.path}\\)$`));
      tokens.push(error.token);
    }
    expect(openFdCount()).toBe(fdsBefore);
    expect(ourChildren()).toEqual(children);
    // The spawn reaped each failed child itself: a job run after them is reported, they never are.
    const { exit } = await run({ command: 'exit 3', forceFork });
    expect(exit.code).toBe(3);
    expect(tokens.filter((token) => reports.has(token))).toEqual([]);
  });

  it.skipIf(cgroupRoot === null)('a start into a cgroup that fails at chdir leaves the cgroup empty and removable', () => {
    const dir = newCgroup();
    expect(spawnError({ cwd: '/nonexistent-heph-cwd', cgroup: dir, forceFork })).toMatchObject({ code: 'ENOENT', syscall: 'chdir' });
    expect(cgroupMembers(dir)).toEqual([]);
    expect(native.cgroupRemove(dir)).toBe(true);
  });

  it('reports the leader’s start time and the inodes of its pipes, as /proc and fstat see them', async () => {
    for (const [merge, stdin] of [[true, 'null'], [false, 'pipe']] as const) {
      const spawnOptions = options({ command: 'exec sleep 60', forceFork, merge, stdin });
      const result = native.spawn(spawnOptions);
      try {
        expect(result.start).toBe(processStartTime(result.pid));
        // Negative control: another process's start time is another number.
        expect(processStartTime(process.pid)).not.toBe(result.start);
        const fds = [result.stdin, result.stdout, result.stderr].filter((fd) => fd >= 0);
        expect(fds).toHaveLength(merge ? 1 : 3);
        expect(result.pipes).toEqual(fds.map((fd) => fs.fstatSync(fd).ino));
      } finally {
        native.pidfdSendSignal(result.pidfd, SIGKILL);
        await reaped(spawnOptions.token);
        closeAll(result);
      }
    }
  });

  it('leaves the caller’s signal mask as it was and no descriptor open over 300 spawns, some failing', async () => {
    const fdsBefore = openFdCount();
    for (let i = 0; i < 300; i++) {
      if (i % 10 === 9) {
        expect(spawnError({ cwd: '/nonexistent-heph-cwd', forceFork }).syscall).toBe('chdir');
        continue;
      }
      const spawnOptions = options({ command: 'exec sleep 60', forceFork, merge: i % 2 === 0, stdin: i % 3 === 0 ? 'pipe' : 'null' });
      const result = native.spawn(spawnOptions);
      native.pidfdSendSignal(result.pidfd, SIGKILL);
      expect(await reaped(spawnOptions.token)).toMatchObject({ code: null, signal: SIGKILL });
      closeAll(result);
    }
    expect(callerMask()).toBe(maskBeforeAnySpawn);
    expect(openFdCount()).toBe(fdsBefore);
  });
});

// ---- negative controls: each oracle above can fail ----------------------------------------------

describe('negative controls', () => {
  it('the self-report sees an ignored signal, a fourth descriptor and a session that is not the leader’s', async () => {
    // The worker itself: Node ignores SIGPIPE (13), and the worker leads no session.
    const worker = fs.readFileSync('/proc/self/status', 'utf8');
    expect(statusMask(worker, 'SigIgn') & (1n << 12n)).not.toBe(0n);
    // The same report from a leader that ignores SIGUSR1 (10), opens fd 7 and runs in a subshell.
    const { output } = await run({ command: `trap '' USR1; exec 7</dev/null; ${SELF_REPORT}` });
    const self = parseSelfReport(output);
    expect(self.sigIgn & (1n << 9n)).not.toBe(0n);
    expect(self.fds).toContain(7);
    const { output: subshell, result } = await run({ command: `sh -c '${SELF_REPORT.replace(/'/g, `'"'"'`)}'` });
    const inner = parseSelfReport(subshell);
    expect(inner.pid).not.toBe(result.pid);
    expect(inner.session).not.toBe(inner.pid);
  });

  it.skipIf(cgroupRoot === null)('the cgroup report names another cgroup for a leader started without one', async () => {
    const dir = newCgroup();
    const { output } = await run({ command: SELF_REPORT });
    expect(parseSelfReport(output).cgroup).not.toBe(`0::${cgroupName(dir)}`);
    expect(native.cgroupRemove(dir)).toBe(true);
  });
});
