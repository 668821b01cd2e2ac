/**
 * The addon's own boundary (STYLE 8): every number argument is checked as an integer in range, so a
 * value that slipped past TypeScript (NaN, 1.5, 2 ** 32 + 3) is a TypeError naming the argument,
 * never a different fd, pid or signal after C++'s truncation; every syscall result is checked; and
 * no error path leaves a descriptor open.
 *
 * Runs in the test worker, which has no children of its own: the addon's reaper is started here so
 * the few jobs spawned are reaped and reported like the supervisor's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { native, type NativeSpawnOptions, type NativeSpawnResult, type ReapedChild } from '../../supervisor/native.js';
import { listProcesses } from '../../supervisor/platform/procfs.js';
import { addonReaper, spawnOptionsFrom } from '../helpers/addon-reaper.js';

const { SIGKILL, SIGTERM } = os.constants.signals;

const group = native;

// ---- reaping and cleanup --------------------------------------------------------------------------

const { reports, reaped, startReports } = addonReaper();
const options = spawnOptionsFrom({}, 1000);

interface Started {
  result: NativeSpawnResult;
  token: number;
}
const started: Started[] = [];

function start(overrides: Partial<NativeSpawnOptions> = {}): Started {
  const spawnOptions = options(overrides);
  const job = { result: native.spawn(spawnOptions), token: spawnOptions.token };
  started.push(job);
  return job;
}

/** Kills (if still running) and waits for the reaper's report, then closes the job's fds. */
async function finish(job: Started): Promise<ReapedChild> {
  started.splice(started.indexOf(job), 1);
  const { pid, pidfd, stdout, stderr } = job.result;
  if (!reports.has(job.token)) {
    if (pidfd >= 0) native.pidfdSendSignal(pidfd, SIGKILL);
    else native.signalPid(pid, SIGKILL);
  }
  const child = await reaped(job.token);
  for (const fd of [pidfd, stdout, stderr]) if (fd >= 0) native.closeFd(fd);
  return child;
}

/** Runs a command to its end through the addon; its exit code. */
async function run(command: string): Promise<number | null> {
  const job = start({ command });
  const child = await reaped(job.token);
  await finish(job);
  return child.code;
}

const openFdCount = () => fs.readdirSync('/proc/self/fd').length;
const ourChildren = () => listProcesses().filter((entry) => entry.ppid === process.pid).map((entry) => entry.pid);
const fdTarget = (fd: number) => {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
};

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-native-guards-'));
/** Lock files are opened relative to a directory descriptor. */
function openScratchLock(): number {
  const dirfd = fs.openSync(scratch, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    return native.lockOpenAt(dirfd, 'lock');
  } finally {
    fs.closeSync(dirfd);
  }
}

beforeAll(() => {
  // The reaper waits for any child: with none of the worker's own around, it takes only ours.
  expect(ourChildren()).toEqual([]);
  startReports();
});

afterEach(async () => {
  for (const job of [...started]) await finish(job);
});

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

// ---- the guards -----------------------------------------------------------------------------------

function expectGuard(call: () => unknown, argument: string): void {
  let thrown: unknown;
  try {
    call();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(TypeError);
  expect((thrown as Error).message).toContain(`${argument} must be`);
}

const NOT_INTEGERS = [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1.5, '3', undefined, null, 3n];

describe('native boundary guards', () => {
  it('closeFd(NaN) throws a TypeError naming fd and closes nothing (not fd 0)', () => {
    const stdin = fdTarget(0);
    expectGuard(() => native.closeFd(Number.NaN), 'fd');
    expect(fdTarget(0)).toBe(stdin);
  });

  it('closeFd never closes another fd than the one named: 1.5 and 2 ** 32 + fd are refused', () => {
    const own = fs.openSync('/dev/null', 'r');
    try {
      for (const value of [own + 0.5, own + 2 ** 32, -1, 2 ** 31]) {
        expectGuard(() => native.closeFd(value), 'fd');
        expect(fdTarget(own)).toBe('/dev/null');
      }
    } finally {
      fs.closeSync(own);
    }
  });

  it('checks every pid, signal, fd, offset and token argument as an integer in range', () => {
    const job = start();
    const lockFd = openScratchLock();
    const tooBigForInt = [2 ** 31, 2 ** 32 + 3];
    const cases: { argument: string; call: (value: unknown) => unknown; outOfRange: number[] }[] = [
      { argument: 'pid', call: (v) => native.pidfdOpen(v as number), outOfRange: [0, -5, ...tooBigForInt] },
      { argument: 'pidfd', call: (v) => native.pidfdSendSignal(v as number, 0), outOfRange: [-1, ...tooBigForInt] },
      { argument: 'signal', call: (v) => native.pidfdSendSignal(job.result.pidfd, v as number), outOfRange: [-1, 65, 2 ** 32] },
      { argument: 'pid', call: (v) => native.signalPid(v as number, 0), outOfRange: [0, -1, ...tooBigForInt, -(2 ** 31)] },
      { argument: 'signal', call: (v) => native.signalPid(job.result.pid, v as number), outOfRange: [-1, 65, 2 ** 32] },
      { argument: 'pid', call: (v) => native.watchParent(v as number, () => {}), outOfRange: [0, -5, ...tooBigForInt] },
      // Refused before anything is armed: this test process never gets a kill-on-parent-death file.
      { argument: 'fd', call: (v) => native.killOnParentDeath(v as number), outOfRange: [-1, ...tooBigForInt] },
      { argument: 'fd', call: (v) => native.lockRange(v as number, true, 0, 1), outOfRange: [-1, ...tooBigForInt] },
      { argument: 'start', call: (v) => native.lockRange(lockFd, true, v as number, 1), outOfRange: [-1, 2 ** 53] },
      { argument: 'length', call: (v) => native.lockRange(lockFd, true, 0, v as number), outOfRange: [-1, 2 ** 53] },
      // A bad cwd makes the spawn fail harmlessly should the guard be missing.
      { argument: 'options.token', call: (v) => native.spawn(options({ cwd: '/nonexistent-heph', token: v as number })), outOfRange: [0, -1, 2 ** 53] },
    ];
    // ctty may be left out (undefined: no terminal); anything else must be an fd or -1.
    for (const value of [...NOT_INTEGERS.filter((v) => v !== undefined), -2, ...tooBigForInt]) {
      expectGuard(() => native.spawn(options({ cwd: '/nonexistent-heph', ctty: value as number })), 'options.ctty');
    }
    // A window size is 1 to 65535 cells each way (struct winsize holds unsigned shorts).
    for (const value of [...NOT_INTEGERS, 0, 65536]) {
      expectGuard(() => native.openPty(value as number, 40, true), 'columns');
      expectGuard(() => native.openPty(120, value as number, true), 'rows');
    }
    for (const value of ['yes', 1, undefined, null]) expectGuard(() => native.openPty(120, 40, value as boolean), 'echo');
    try {
      for (const { argument, call, outOfRange } of cases) {
        for (const value of [...NOT_INTEGERS, ...outOfRange]) expectGuard(() => call(value), argument);
      }
    } finally {
      native.closeFd(lockFd);
    }
  });

  it('checks the descriptors, names, modes and lists of the directory, lock and descriptor-passing calls', () => {
    const dirfd = fs.openSync(scratch, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    const [left, right] = native.seqpacketPair();
    const tooBigForInt = [2 ** 31, 2 ** 32 + 3];
    try {
      const fdCases: { argument: string; call: (value: unknown) => unknown }[] = [
        { argument: 'dirfd', call: (v) => native.openDirAt(v as number, 'x') },
        { argument: 'dirfd', call: (v) => native.mkdirAt(v as number, 'x', 0o700) },
        { argument: 'dirfd', call: (v) => native.statAt(v as number, 'x') },
        { argument: 'dirfd', call: (v) => native.readLinkAt(v as number, 'x') },
        { argument: 'dirfd', call: (v) => native.unlinkAt(v as number, 'x', false) },
        { argument: 'dirfd', call: (v) => native.lockOpenAt(v as number, 'x') },
        { argument: 'fd', call: (v) => native.unlockRange(v as number, 0, 0) },
        { argument: 'socket', call: (v) => native.sendFds(v as number, Buffer.from('x'), [dirfd]) },
        { argument: 'socket', call: (v) => native.receiveFds(v as number, false) },
        { argument: 'fds[i]', call: (v) => native.sendFds(left, Buffer.from('x'), [v as number]) },
      ];
      for (const { argument, call } of fdCases) {
        for (const value of [...NOT_INTEGERS, -1, ...tooBigForInt]) expectGuard(() => call(value), argument);
      }
      for (const value of [...NOT_INTEGERS, -1, 0o10000]) expectGuard(() => native.mkdirAt(dirfd, 'x', value as number), 'mode');
      for (const value of [...NOT_INTEGERS, -1, 2 ** 53]) {
        expectGuard(() => native.unlockRange(0, value as number, 1), 'start');
        expectGuard(() => native.unlockRange(0, 0, value as number), 'length');
      }
      // One path component only: a '/' would let openat follow symlinks in the components before it.
      for (const name of ['', 'a/b', '/etc', '.', '..', 'a\0b', 7, undefined]) {
        expectGuard(() => native.openDirAt(dirfd, name as string), 'name');
        expectGuard(() => native.mkdirAt(dirfd, name as string, 0o700), 'name');
        expectGuard(() => native.statAt(dirfd, name as string), 'name');
        expectGuard(() => native.readLinkAt(dirfd, name as string), 'name');
        expectGuard(() => native.unlinkAt(dirfd, name as string, false), 'name');
        expectGuard(() => native.lockOpenAt(dirfd, name as string), 'name');
      }
      for (const value of ['yes', 1, undefined]) {
        expectGuard(() => native.unlinkAt(dirfd, 'x', value as boolean), 'directory');
        expectGuard(() => native.receiveFds(right, value as boolean), 'peek');
      }
      for (const payload of ['text', Buffer.alloc(0), Buffer.alloc(65_537), undefined]) {
        expectGuard(() => native.sendFds(left, payload as Buffer, [dirfd]), 'payload');
      }
      for (const fds of [new Array(254).fill(dirfd), 'x', undefined]) expectGuard(() => native.sendFds(left, Buffer.from('x'), fds as number[]), 'fds');
      // Nothing was sent by any of the refused calls.
      expect(native.receiveFds(right, false)).toBeNull();
    } finally {
      fs.closeSync(dirfd);
      native.closeFd(left);
      native.closeFd(right);
    }
  });

  it('checks the boolean and string options of spawn and lockRange', () => {
    const lockFd = openScratchLock();
    try {
      for (const value of ['yes', 1, undefined, null]) {
        expectGuard(() => native.spawn(options({ cwd: '/nonexistent-heph', merge: value as boolean })), 'options.merge');
        expectGuard(() => native.spawn(options({ cwd: '/nonexistent-heph', forceFork: value as boolean })), 'options.forceFork');
        expectGuard(() => native.lockRange(lockFd, value as boolean, 0, 1), 'exclusive');
      }
      expectGuard(() => native.spawn(options({ cgroup: '/nonexistent-heph\0/x' })), 'options.cgroup');
    } finally {
      native.closeFd(lockFd);
    }
  });

  it('watchParent answers false for a process that is not our parent, and then opens and installs nothing', async () => {
    // A child of ours (pid and start known) and pid 1: neither is this process's parent. A watch
    // that went ahead would catch the parent-death signal here (SigCgt) and hold a pidfd and a pipe.
    const job = start();
    const caught = () => /^SigCgt:\s*([0-9a-f]+)$/m.exec(fs.readFileSync('/proc/self/status', 'latin1'))![1];
    const before = { fds: openFdCount(), caught: caught() };
    const calls: unknown[][] = [];
    expect(native.watchParent(job.result.pid, (...args: unknown[]) => calls.push(args))).toBe(false);
    expect(native.watchParent(1, (...args: unknown[]) => calls.push(args))).toBe(false);
    expect({ fds: openFdCount(), caught: caught() }).toEqual(before);
    expect(calls).toEqual([]);
    await finish(job);
  });
});

describe('native error paths leak nothing', () => {
  it('spawn closes what it opened when a cgroup or the cwd is missing, and reaps a child whose setup failed', () => {
    const before = openFdCount();
    const children = ourChildren();
    expect(() => native.spawn(options({ cgroup: '/nonexistent-heph' }))).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'open' }));
    expect(() => native.spawn(options({ cwd: '/nonexistent-heph' }))).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'chdir' }));
    expect(() => native.spawn(options({ cwd: '/nonexistent-heph', forceFork: true }))).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'chdir' }));
    expect(openFdCount()).toBe(before);
    expect(ourChildren()).toEqual(children);
  });

  it('spawn out of descriptors: each step fails cleanly, and pidfd_open failing after fork kills and reaps the child', async () => {
    const limits = /Max open files\s+(\d+)\s+(\d+)/.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    const [soft, hard] = [Number(limits?.[1]), Number(limits?.[2])];
    // A soft limit just above what the worker has open, so filling it takes few descriptors.
    const lowered = Math.max(...fs.readdirSync('/proc/self/fd').map(Number)) + 64;
    expect(await run(`prlimit --pid ${process.pid} --nofile=${lowered}:${hard}`)).toBe(0);
    const children = ourChildren();
    const fillers: number[] = [];
    const failures: { free: number; syscall: string; code: string; leaked: number }[] = [];
    let spawned: NativeSpawnResult | undefined;
    try {
      for (;;) {
        try {
          fillers.push(fs.openSync('/dev/null', 'r'));
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EMFILE') break;
          throw error;
        }
      }
      // Free one descriptor at a time (one more is needed to count them) until the fork is reached.
      for (let free = 1; free <= 12 && spawned === undefined; free++) {
        fs.closeSync(fillers.pop()!);
        const before = openFdCount();
        try {
          const spawnOptions = options({ forceFork: true });
          spawned = native.spawn(spawnOptions);
          started.push({ result: spawned, token: spawnOptions.token });
        } catch (error) {
          const { syscall = '', code = '' } = error as NodeJS.ErrnoException;
          failures.push({ free, syscall, code, leaked: openFdCount() - before });
          if (syscall === 'pidfd_open') break;
        }
      }
    } finally {
      for (const fd of fillers) fs.closeSync(fd);
      expect(await run(`prlimit --pid ${process.pid} --nofile=${soft}:${hard}`)).toBe(0);
    }
    expect(spawned).toBeUndefined();
    expect(failures.length).toBeGreaterThan(1);
    for (const failure of failures) expect(failure).toMatchObject({ code: 'EMFILE', leaked: 0 });
    expect(failures.at(-1)?.syscall).toBe('pidfd_open');
    expect(ourChildren()).toEqual(children);
  });
});

describe('signalChildGroup: the group of a job leader, only while the leader is unreaped', () => {
  it('signals the group while its leader lives, and refuses once the leader is reaped or for a pid not ours', async () => {
    const job = start();
    expect(group.signalChildGroup(job.result.pid, SIGTERM)).toBe(true);
    expect(await reaped(job.token)).toMatchObject({ code: null, signal: SIGTERM });
    // Reaped: the number may now name a stranger's group.
    expect(group.signalChildGroup(job.result.pid, SIGTERM)).toBe(false);
    expect(group.signalChildGroup(process.pid, 0)).toBe(false);
    await finish(job);
  });

  it('checks its arguments as integers', () => {
    for (const value of [...NOT_INTEGERS, 0, -1, 2 ** 31]) expectGuard(() => group.signalChildGroup(value as number, 0), 'pid');
    for (const value of [...NOT_INTEGERS, -1, 65]) expectGuard(() => group.signalChildGroup(process.pid, value as number), 'signal');
  });
});

describe('closeInheritedFds: checked as the other calls are', () => {
  it('checks its argument as an integer', () => {
    for (const value of [...NOT_INTEGERS, -1, 2 ** 31]) expectGuard(() => native.closeInheritedFds(value as number), 'lastKept');
  });
});

describe('setNonBlocking: our end of a pipe, not the job’s', () => {
  /** O_NONBLOCK as /proc/PID/fdinfo prints it (octal; asm-generic/fcntl.h). */
  const O_NONBLOCK = 0o4000;
  const flagsOf = (pid: number | 'self', fd: number) => Number.parseInt(/^flags:\s+([0-7]+)$/m.exec(fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'latin1'))![1]!, 8);

  it('makes the read end non-blocking (a read says EAGAIN), and leaves the child’s write end blocking', async () => {
    const job = start({ merge: true, command: 'exec sleep 60' });
    try {
      const { stdout, pid } = job.result;
      // The control: the spawn hands the end over blocking, as it got it.
      expect(flagsOf('self', stdout) & O_NONBLOCK).toBe(0);
      native.setNonBlocking(stdout);
      expect(flagsOf('self', stdout) & O_NONBLOCK).toBe(O_NONBLOCK);
      expect(flagsOf(pid, 1) & O_NONBLOCK).toBe(0);
      expect(() => fs.readSync(stdout, Buffer.alloc(16))).toThrow(expect.objectContaining({ code: 'EAGAIN' }));
    } finally {
      await finish(job);
    }
  });

  it('checks its argument as an integer', () => {
    for (const value of [...NOT_INTEGERS, -1, 2 ** 31]) expectGuard(() => native.setNonBlocking(value as number), 'fd');
  });
});
