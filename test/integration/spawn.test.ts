/**
 * The addon's spawn on both of its paths: clone3 with CLONE_VM | CLONE_VFORK on a child stack of
 * its own (the normal one, `method: 'clone3'`), and fork with a write to cgroup.procs (`forceFork`,
 * the fallback for kernels without clone3 or CLONE_INTO_CGROUP). On each: what the job leader finds
 * when its first command runs (no blocked or ignored signal, fds 0-2 only, its own session and
 * process group, its cgroup), how a start that fails before or at execve is reported (the failing
 * step, the errno, the path), and that nothing is left behind: no descriptor, no child, no reaper
 * report, no change to the caller's signal mask. Each path both inline (`spawn`: this thread
 * sleeps until the child has exec'd) and on the addon's spawner threads (`spawnAsync`), where
 * several spawns run at once and each result comes back before the reaper's report of its child.
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

type Via = 'inline' | 'thread';

/** A spawn inline (spawn) or on a spawner thread (spawnAsync); rejects with what spawn throws. */
function spawnVia(spawnOptions: NativeSpawnOptions, via: Via): Promise<NativeSpawnResult> {
  if (via === 'inline') return new Promise((resolve) => resolve(native.spawn(spawnOptions)));
  return new Promise((resolve, reject) => native.spawnAsync(spawnOptions, (error, result) => (error ? reject(error) : resolve(result!))));
}

/** Runs a command to its end; its output, exit report and spawn result. */
async function run(overrides: Partial<NativeSpawnOptions>, via: Via = 'inline'): Promise<{ output: string; exit: ReapedChild; result: NativeSpawnResult }> {
  const spawnOptions = options(overrides);
  const result = await spawnVia(spawnOptions, via);
  try {
    const output = readToEnd(result.stdout);
    return { output, exit: await reaped(spawnOptions.token), result };
  } finally {
    closeAll(result);
  }
}

/** The error a spawn throws. */
async function spawnError(overrides: Partial<NativeSpawnOptions>, via: Via = 'inline'): Promise<NodeJS.ErrnoException & { token: number }> {
  const spawnOptions = options(overrides);
  try {
    const result = await spawnVia(spawnOptions, via);
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
  { method: 'clone3', forceFork: false, via: 'inline' },
  { method: 'fork', forceFork: true, via: 'inline' },
  { method: 'clone3', forceFork: false, via: 'thread' },
  { method: 'fork', forceFork: true, via: 'thread' },
] as const)('spawn through $method ($via)', ({ method, forceFork, via }) => {
  it('starts the leader with no blocked or ignored signal, fds 0-2 only, in a session and process group of its own', async () => {
    // The worker ignores SIGPIPE (Node does) and is no session leader: none of that may carry over.
    const { output, exit, result } = await run({ command: SELF_REPORT, forceFork }, via);
    expect(result.method).toBe(method);
    expect(exit).toMatchObject({ code: 0, signal: 0 });
    const self = parseSelfReport(output);
    expect(self).toMatchObject({ sigBlk: 0n, sigIgn: 0n, fds: [0, 1, 2], pid: result.pid, ppid: process.pid, pgrp: result.pid, session: result.pid });
  });

  it.skipIf(cgroupRoot === null)('starts the leader inside the cgroup given', async () => {
    const dir = newCgroup();
    const { output, result } = await run({ command: SELF_REPORT, cgroup: dir, forceFork }, via);
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
      const error = await spawnError({ ...overrides, forceFork }, via);
      expect(error).toMatchObject(expected);
      expect(error.message).toMatch(new RegExp(`^${expected.syscall} failed: .+ \\(${expected.path}\\)$`));
      tokens.push(error.token);
    }
    expect(openFdCount()).toBe(fdsBefore);
    expect(ourChildren()).toEqual(children);
    // The spawn reaped each failed child itself: a job run after them is reported, they never are.
    const { exit } = await run({ command: 'exit 3', forceFork }, via);
    expect(exit.code).toBe(3);
    expect(tokens.filter((token) => reports.has(token))).toEqual([]);
  });

  it.skipIf(cgroupRoot === null)('a start into a cgroup that fails at chdir leaves the cgroup empty and removable', async () => {
    const dir = newCgroup();
    expect(await spawnError({ cwd: '/nonexistent-heph-cwd', cgroup: dir, forceFork }, via)).toMatchObject({ code: 'ENOENT', syscall: 'chdir' });
    expect(cgroupMembers(dir)).toEqual([]);
    expect(native.cgroupRemove(dir)).toBe(true);
  });

  it('reports the leader’s start time and the inodes of its pipes, as /proc and fstat see them', async () => {
    for (const [merge, stdin] of [[true, 'null'], [false, 'pipe']] as const) {
      const spawnOptions = options({ command: 'exec sleep 60', forceFork, merge, stdin });
      const result = await spawnVia(spawnOptions, via);
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
        expect((await spawnError({ cwd: '/nonexistent-heph-cwd', forceFork }, via)).syscall).toBe('chdir');
        continue;
      }
      const spawnOptions = options({ command: 'exec sleep 60', forceFork, merge: i % 2 === 0, stdin: i % 3 === 0 ? 'pipe' : 'null' });
      const result = await spawnVia(spawnOptions, via);
      native.pidfdSendSignal(result.pidfd, SIGKILL);
      expect(await reaped(spawnOptions.token)).toMatchObject({ code: null, signal: SIGKILL });
      closeAll(result);
    }
    expect(callerMask()).toBe(maskBeforeAnySpawn);
    expect(openFdCount()).toBe(fdsBefore);
  });
});

// ---- spawns on the spawner threads --------------------------------------------------------------

/** Which thread of ours the kernel lists each child under (/proc/self/task/TID/children). */
function clonedBy(): Map<number, number> {
  const byPid = new Map<number, number>();
  for (const tid of fs.readdirSync('/proc/self/task').map(Number)) {
    let text = '';
    try {
      text = fs.readFileSync(`/proc/self/task/${tid}/children`, 'latin1');
    } catch {
      continue; // a thread that ended meanwhile
    }
    for (const pid of text.split(' ').filter(Boolean).map(Number)) byPid.set(pid, tid);
  }
  return byPid;
}

describe('spawns on the spawner threads', () => {
  it('give each result before the reaper reports its child, whose exit is its own, for leaders that exit at once', async () => {
    const fdsBefore = openFdCount();
    const quick = Array.from({ length: 60 }, (_, i) => options({ command: `exit ${i + 1}` }));
    const reportedFirst: number[] = [];
    const results = await Promise.all(
      quick.map(
        (spawnOptions) =>
          new Promise<NativeSpawnResult>((resolve, reject) =>
            native.spawnAsync(spawnOptions, (error, result) => {
              // A report already here would have found no job in the supervisor.
              if (reports.has(spawnOptions.token)) reportedFirst.push(spawnOptions.token);
              if (error) reject(error);
              else resolve(result!);
            }),
          ),
      ),
    );
    const exits = await Promise.all(quick.map((spawnOptions) => reaped(spawnOptions.token)));
    expect(reportedFirst).toEqual([]);
    expect(exits.map((exit) => exit.code)).toEqual(quick.map((_, i) => i + 1));
    expect(exits.map((exit) => exit.pid)).toEqual(results.map((result) => result.pid));
    for (const result of results) closeAll(result);
    expect(openFdCount()).toBe(fdsBefore);
  });

  it('run at once, on threads other than this one (the kernel lists each leader under the thread that cloned it)', async () => {
    const spawnAll = (via: Via) => Promise.all(Array.from({ length: 40 }, () => options({ command: 'exec sleep 60' })).map(async (spawnOptions) => ({ spawnOptions, result: await spawnVia(spawnOptions, via) })));
    const threadOf = async (via: Via) => {
      const spawned = await spawnAll(via);
      const byPid = clonedBy();
      const threads = new Set(spawned.map(({ result }) => byPid.get(result.pid)));
      for (const { spawnOptions, result } of spawned) {
        native.pidfdSendSignal(result.pidfd, SIGKILL);
        await reaped(spawnOptions.token);
        closeAll(result);
      }
      return threads;
    };
    const onThreads = await threadOf('thread');
    expect(onThreads.has(process.pid)).toBe(false);
    expect(onThreads.has(undefined)).toBe(false);
    expect(onThreads.size).toBeGreaterThanOrEqual(2);
    // Negative control: inline, every leader is this thread's child.
    expect([...(await threadOf('inline'))]).toEqual([process.pid]);
  });

  it('refuses bad options at once, with spawn\'s message, and never calls back', () => {
    let called = false;
    expect(() => native.spawnAsync({ ...options(), cwd: 5 } as unknown as NativeSpawnOptions, () => (called = true))).toThrow(/options\.cwd/);
    expect(() => native.spawnAsync(options(), undefined as unknown as () => void)).toThrow(/callback/);
    expect(called).toBe(false);
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
