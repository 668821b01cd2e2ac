/**
 * The one module that touches the binary. It loads the addon (an override, a local build, then the
 * prebuilt binaries shipped in prebuilds/), names the errno of every error it throws, and declares
 * the exact native signatures; nothing else imports the `.node` file.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import util from 'node:util';
// Its matching rules only (never its loader), bundled: resolving and compiling it from
// node_modules took ~1.5 ms of every supervisor start (bench: start).
import nodeGypBuild from 'node-gyp-build/node-gyp-build.js';

export interface NativeSpawnOptions {
  shell: string;
  command: string;
  cwd: string;
  /** `KEY=value` entries, validated before the call. */
  env: string[];
  /** Cgroup directory to start the child in, or null for none. */
  cgroup: string | null;
  /** Groups in cgroup v1 hierarchies (at most 4) the child joins before it execs: its limits. */
  joinGroups?: string[];
  stdin: 'null' | 'pipe';
  /** One pipe for stdout and stderr. */
  merge: boolean;
  /** Reported back by the reaper with this child's exit; 0 is reserved for orphans. */
  token: number;
  /** Skip clone3 and use the fork + write-to-cgroup.procs path (for tests of that path). */
  forceFork: boolean;
  /** A terminal's slave (openPty): the child's controlling terminal and fds 0-2; no pipes are
   * made and stdin/stdout/stderr come back -1. Default: -1 (none). */
  ctty?: number;
}

export interface NativeSpawnResult {
  pid: number;
  pidfd: number;
  /** Write end of the stdin pipe, or -1. */
  stdin: number;
  stdout: number;
  /** -1 when merged. */
  stderr: number;
  /**
   * 'clone3': CLONE_VM | CLONE_VFORK (| CLONE_INTO_CGROUP) on a stack of its own, returning once
   * execve succeeded. 'fork': the fallback (no clone3 or CLONE_INTO_CGROUP, or forceFork).
   */
  method: 'clone3' | 'fork';
  /** The child's start time (field 22 of /proc/PID/stat), read while a pidfd showed it unreaped; null when it was not. */
  start: string | null;
  /** Inodes of the pipes the child got as stdin, stdout and stderr (those that are pipes). */
  pipes: number[];
}

export interface ReapedChild {
  pid: number;
  /** The token given to spawn, or 0 for an orphan reparented to us. */
  token: number;
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  /** Terminating signal number, or 0. */
  signal: number;
}

export interface NativeAddon {
  setsid(): number;
  setChildSubreaper(): void;
  isChildSubreaper(): boolean;
  /** prctl(PR_SET_DUMPABLE, 0): no process of our uid may ptrace us, take our descriptors (pidfd_getfd) or read our /proc/PID/fd. */
  setNotDumpable(): void;
  /** _exit(2) with `code`: no atexit handlers, no platform teardown. */
  exitNow(code: number): never;
  spawn(options: NativeSpawnOptions): NativeSpawnResult;
  /**
   * spawn's work on one of the addon's spawner threads (this thread goes on while the child
   * execs); `callback` runs on this thread with spawn's error or result, before the reaper's report
   * of that child. Throws (and never calls back) for options spawn would refuse.
   */
  spawnAsync(options: NativeSpawnOptions, callback: (error: Error | null, result?: NativeSpawnResult) => void): void;
  /** A pseudo-terminal pair, both ends close-on-exec and O_NOCTTY, the master non-blocking, with
   * this window size, echo on or off, and no "\n" to "\r\n" translation. */
  openPty(columns: number, rows: number, echo: boolean): { master: number; slave: number };
  startReaper(callback: (child: ReapedChild) => void): void;
  /** True while a child of this process (of any thread) has exited and is not reaped yet (a peek). */
  hasZombieChild(): boolean;
  /**
   * Children of this process that spawn did not start (or started and the reaper has reaped):
   * orphans reparented to us, zombies included. Null when the kernel has no
   * /proc/PID/task/TID/children files.
   */
  adoptedChildren(): number[] | null;
  pidfdOpen(pid: number): number;
  /** False when the process has already exited. */
  pidfdSendSignal(pidfd: number, signal: number): boolean;
  /** False on ESRCH. Negative pids address process groups. */
  signalPid(pid: number, signal: number): boolean;
  /**
   * Signals the process group of a leader this addon spawned, only while that leader is still
   * registered and not reaped (checked under the reaper's lock, so the group id cannot have been
   * recycled). False when the leader is gone or unknown.
   */
  signalChildGroup(pid: number, signal: number): boolean;
  closeFd(fd: number): void;
  /** Closes every descriptor above `lastKept` that is not close-on-exec (what the exec'ing process leaked); returns how many. */
  closeInheritedFds(lastKept: number): number;
  /** Sets O_NONBLOCK on `fd`'s file description (of a pipe: our end only). */
  setNonBlocking(fd: number): void;
  /**
   * Watches our parent `pid` (once per process): calls back once when it dies, seen by the
   * parent-death signal (sent when the thread that spawned us exits, before a dying process tears
   * down its memory) or by its pidfd (the whole process has exited); with an errno error instead
   * if the watch itself failed. False, and no callback, when `pid` is no longer our parent.
   */
  watchParent(pid: number, callback: (error?: Error) => void): boolean;
  /**
   * From now on the parent's death writes "1" to `fd` at once, from the signal handler, before
   * any JavaScript runs (once per process; `fd` must stay open for the life of the process).
   */
  killOnParentDeath(fd: number): void;
  cgroupCreate(dir: string): void;
  /** False while the cgroup is busy (not yet empty). */
  cgroupRemove(dir: string): boolean;
  /** False when the cgroup no longer exists. */
  cgroupKill(dir: string): boolean;
  cgroupPopulated(dir: string): boolean;
  /** An O_PATH descriptor of directory `name` (one path component) in `dirfd`; never through a symlink (ENOTDIR). */
  openDirAt(dirfd: number, name: string): number;
  /** False when `name` already exists (as anything). */
  mkdirAt(dirfd: number, name: string, mode: number): boolean;
  /** `name` itself (a symlink is not followed); null when there is no such entry. */
  statAt(dirfd: number, name: string): NativeStat | null;
  readLinkAt(dirfd: number, name: string): string;
  /** False when there was no such entry. */
  unlinkAt(dirfd: number, name: string, directory: boolean): boolean;
  /** Opens (creating 0600) lock file `name` in `dirfd`, never through a symlink; close it with closeFd to drop its locks. */
  lockOpenAt(dirfd: number, name: string): number;
  /** Takes an OFD lock on [start, start+length) of the file; false when someone holds a conflicting one. */
  lockRange(fd: number, exclusive: boolean, start: number, length: number): boolean;
  /** Drops the OFD locks of the open file description on [start, start+length) (0: to the end), for every descriptor that shares it. */
  unlockRange(fd: number, start: number, length: number): void;
  /** A connected pair of unix SOCK_SEQPACKET sockets, close-on-exec. */
  seqpacketPair(): [number, number];
  /** One message with 0 to 253 descriptors; false when it does not fit (send buffer full, or ETOOMANYREFS). */
  sendFds(socket: number, payload: Buffer, fds: number[]): boolean;
  /** The first queued message (with `peek`, copies of its descriptors, and it stays queued); null when none. */
  receiveFds(socket: number, peek: boolean): { payload: Buffer; fds: number[] } | null;
}

export interface NativeStat {
  type: 'directory' | 'file' | 'symlink' | 'other';
  /** Permission bits with set-id and sticky (& 0o7777). */
  mode: number;
  uid: number;
  nlink: number;
}

/**
 * Set to a `.node` file, the only binary tried: CI runs the suite once per binary (the shipped
 * prebuild, the cmake-js build, the node-gyp build) and must know which one ran.
 */
export const ADDON_OVERRIDE_ENV = 'HEPH_JOBS_ADDON';

/** The local builds a developer makes (`npm run build:native`, `npm run build:gyp`), in order. */
const LOCAL_BUILDS = ['build/Release/heph_jobs.node', 'build/Debug/heph_jobs.node'];

const require = createRequire(import.meta.url);

function readdir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * The prebuilt binaries that fit this process, best first: node-gyp-build's rules (platform and
 * arch folder; napi, libc (glibc or musl), armv and uv tags), which prebuildify's names follow.
 */
function prebuildCandidates(root: string): string[] {
  const match = nodeGypBuild;
  type PrebuildTuple = NonNullable<ReturnType<typeof match.parseTuple>>;
  type PrebuildTags = NonNullable<ReturnType<typeof match.parseTags>>;
  const folder = path.join(root, 'prebuilds');
  const tuples = readdir(folder)
    .map((name) => match.parseTuple(name))
    .filter(match.matchTuple(process.platform, process.arch)) as PrebuildTuple[];
  return tuples.sort(match.compareTuples).flatMap((tuple) => {
    const dir = path.join(folder, tuple.name);
    const tags = readdir(dir)
      .map((file) => match.parseTags(file))
      .filter(match.matchTags('node', process.versions.modules)) as PrebuildTags[];
    return tags.sort(match.compareTags('node')).map((tag) => path.join(dir, tag.file));
  });
}

/**
 * Every file the loader tries, in order: the override alone when it is set; else the local builds
 * (a developer's fresh build wins over the shipped one), then the prebuilds that fit. A generator,
 * so that prebuilds/ is read only when no local build loaded (start time).
 */
function* candidateFiles(root: string, env: NodeJS.ProcessEnv): Generator<string> {
  const override = env[ADDON_OVERRIDE_ENV];
  if (override) return yield path.resolve(override);
  for (const build of LOCAL_BUILDS) yield path.join(root, build);
  yield* prebuildCandidates(root);
}

/** The files loadAddonFrom would try, in order. */
export function addonCandidates(root: string, env: NodeJS.ProcessEnv = process.env): string[] {
  return [...candidateFiles(root, env)];
}

/** Loads the first candidate that loads; else throws, listing every path tried and why it failed. */
export function loadAddonFrom(root: string, env: NodeJS.ProcessEnv = process.env): { addon: NativeAddon; file: string } {
  const candidates = candidateFiles(root, env);
  const failures: string[] = [];
  for (const file of candidates) {
    if (!fs.existsSync(file)) {
      failures.push(`  ${file}: no such file`);
      continue;
    }
    try {
      return { addon: require(file) as NativeAddon, file };
    } catch (error) {
      failures.push(`  ${file}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  const advice = env[ADDON_OVERRIDE_ENV]
    ? `${ADDON_OVERRIDE_ENV} names the only binary to load; unset it to use the usual ones.`
    : `No prebuilt binary fits ${process.platform}-${process.arch} here. Build one: install CMake and a C++17 ` +
      'compiler, then run `npm rebuild heph-jobs` (in a checkout, `npm run build:native`).';
  throw new Error(`heph-jobs: the native addon could not be loaded. ${advice} Tried:\n${failures.join('\n')}`);
}

/** The package root. */
function packageRoot(): string {
  // This file runs from supervisor/ (tests, through vitest) or from dist/supervisor/ (built): the
  // package root is one level up, or two.
  const here = path.dirname(fileURLToPath(import.meta.url));
  const fromDist = path.basename(path.dirname(here)) === 'dist';
  return fromDist ? path.resolve(here, '..', '..') : path.resolve(here, '..');
}

/** Node's own errno table, for the names util.getSystemErrorName (libuv's list) lacks: ECHILD, ENOLCK, EDQUOT, ... */
const ERRNO_NAMES = new Map<number, string>();
for (const [name, value] of Object.entries(os.constants.errno)) if (!ERRNO_NAMES.has(value)) ERRNO_NAMES.set(value, name);

/** The name of a (positive) errno, as Node names it in its own errors' `code`; UNKNOWN for one it does not know. */
export function errnoName(errno: number): string {
  if (Number.isInteger(errno) && errno > 0) {
    const name = util.getSystemErrorName(-errno);
    if (!name.startsWith('Unknown')) return name;
  }
  return ERRNO_NAMES.get(errno) ?? 'UNKNOWN';
}

/** Adds `code` to an errno error from the addon (it carries `errno` and `syscall` only). */
function withCode(error: unknown): unknown {
  if (error instanceof Error) {
    const fields = error as NodeJS.ErrnoException;
    if (typeof fields.errno === 'number' && fields.code === undefined) fields.code = errnoName(fields.errno);
  }
  return error;
}

/**
 * The addon with `code` on every errno error it throws or hands to a callback (watchParent's): the
 * binary names none itself, so that it needs nothing newer than glibc 2.28 (see native/errors.h).
 */
function withErrnoCodes(addon: NativeAddon): NativeAddon {
  const wrapped: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(addon)) {
    if (typeof value !== 'function') continue;
    const call = value as (...args: unknown[]) => unknown;
    wrapped[name] = (...args: unknown[]) => {
      const named = args.map((arg) =>
        typeof arg === 'function' ? (...results: unknown[]) => (arg as (...results: unknown[]) => unknown)(...results.map(withCode)) : arg,
      );
      try {
        return call(...named);
      } catch (error) {
        throw withCode(error);
      }
    };
  }
  return Object.freeze(wrapped) as unknown as NativeAddon;
}

const loaded = loadAddonFrom(packageRoot());

/** The `.node` file this process loaded. */
export const addonFile: string = loaded.file;
export const native: NativeAddon = withErrnoCodes(loaded.addon);
