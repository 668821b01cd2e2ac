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
  /**
   * 'clone3': CLONE_VM | CLONE_VFORK (| CLONE_INTO_CGROUP) on a stack of its own, returning once
   * execve succeeded. 'fork': the fallback (no clone3 or CLONE_INTO_CGROUP, or forceFork).
   */
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
  /** Opens (creating 0600) a lock file; close it with closeFd to drop its locks. */
  lockOpen(file: string): number;
  /** Takes an OFD lock on [start, start+length) of the file; false when someone holds a conflicting one. */
  lockRange(fd: number, exclusive: boolean, start: number, length: number): boolean;
}

const here = path.dirname(fileURLToPath(import.meta.url));

/** Build folders in the order we try them: cmake-js, node-gyp, node-gyp debug. */
function candidatePaths(): string[] {
  // This file runs from src/ (tests) or dist/src/ (built): look upwards for the package root.
  const roots = [path.resolve(here, '..'), path.resolve(here, '..', '..')];
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
