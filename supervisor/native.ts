/**
 * The one module that touches the binary. It loads the addon from the known build folders in
 * order and declares the exact native signatures; nothing else imports the `.node` file.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export interface NativeSpawnOptions {
  shell: string;
  command: string;
  cwd: string;
  /** `KEY=value` entries, validated before the call. */
  env: string[];
  /** Cgroup directory to start the child in, or null for none. */
  cgroup: string | null;
  stdin: 'null' | 'pipe';
  /** One pipe for stdout and stderr. */
  merge: boolean;
  /** Reported back by the reaper with this child's exit; 0 is reserved for orphans. */
  token: number;
  /** Skip clone3 and use the fork + write-to-cgroup.procs path (for tests of that path). */
  forceFork: boolean;
}

export interface NativeSpawnResult {
  pid: number;
  pidfd: number;
  /** Write end of the stdin pipe, or -1. */
  stdin: number;
  stdout: number;
  /** -1 when merged. */
  stderr: number;
  method: 'clone3' | 'fork';
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
  spawn(options: NativeSpawnOptions): NativeSpawnResult;
  startReaper(callback: (child: ReapedChild) => void): void;
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
  /** Calls back once the process exits; with an errno error if the watch itself failed. */
  watchPidfd(pidfd: number, callback: (error?: Error) => void): void;
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
  /** One message with up to 253 descriptors; false when the peer's queue is full. */
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

const here = path.dirname(fileURLToPath(import.meta.url));

/** Build folders in the order we try them: Release (cmake-js, node-gyp), then Debug. */
function candidatePaths(): string[] {
  // This file runs from supervisor/ (tests, through vitest) or from dist/supervisor/ (built): the
  // package root is one level up, or two.
  const fromDist = path.basename(path.dirname(here)) === 'dist';
  const roots = fromDist ? [path.resolve(here, '..', '..')] : [path.resolve(here, '..')];
  const builds = ['build/Release/heph_jobs.node', 'build/Debug/heph_jobs.node'];
  return roots.flatMap((root) => builds.map((build) => path.join(root, build)));
}

function loadAddon(): NativeAddon {
  const require = createRequire(import.meta.url);
  const failures: string[] = [];
  for (const candidate of candidatePaths()) {
    try {
      return require(candidate) as NativeAddon;
    } catch (error) {
      failures.push(`  ${candidate}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(
    'heph-jobs: the native addon could not be loaded. Build it with `npm run build:native` ' +
      `(or reinstall with \`npm install\`). Tried:\n${failures.join('\n')}`,
  );
}

export const native: NativeAddon = loadAddon();
