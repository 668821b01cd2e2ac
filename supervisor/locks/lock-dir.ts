/**
 * The lock directory, opened once and used only through its descriptor (STYLE 23). The default
 * place, <tmpdir>/heph-jobs-<uid>/locks, lies in a directory every local user may write to, so
 * another user can plant any level of it before we come (issue 12, item 1). So:
 *
 * - Every level is walked from `/` one component at a time, relative to the previous level's
 *   descriptor, never following a symlink blindly: a level that does not exist is made 0700 by us;
 *   a symlink is followed only when root or we own it (then nobody else could have put it there);
 *   each level must be owned by root or us and, if others may write to it, be sticky (as /tmp is:
 *   there nobody may rename or remove an entry of ours).
 * - The lock directory itself must be ours and grant nobody else any access.
 * - What is checked is what was opened (fstat of the descriptor, not of a path), and every later
 *   use is relative to that descriptor: a level renamed or swapped afterwards changes nothing.
 * - Nothing is ever chmodded: a level that fails is refused, not repaired.
 *
 * When the requested place fails, a private directory (mkdtemp, 0700, checked the same way) is
 * used instead, and the reason is reported (hello's `locks.refused`, shown by
 * capabilities().limitations): the runtime keeps working, but its locks then exclude only itself.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LockDirInfo, LockDirProblem } from '../../src/protocol/messages.js';
import { native } from '../native.js';

/** As many symlinks as the kernel follows in one path (MAXSYMLINKS, path_resolution(7)). */
const MAX_SYMLINKS = 40;
const S_ISVTX = 0o1000;

export class UnsafeLockDirError extends Error {
  constructor(readonly problem: LockDirProblem) {
    super(`lock directory level ${problem.level} is not safe: ${problem.reason}`);
  }
}

/** An open lock directory: `fd` (O_PATH) is what every lock file is opened relative to. */
export interface LockDirectory {
  readonly fd: number;
  readonly info: LockDirInfo;
  /** Closes the descriptor; a private directory is removed with its files. */
  close(): void;
}

function unsafe(level: string, reason: LockDirProblem['reason'], extra: Omit<LockDirProblem, 'level' | 'reason'> = {}): never {
  throw new UnsafeLockDirError({ level, reason, ...extra });
}

/**
 * The uid a file shows when its owner has no uid in our user namespace (a rootless container's
 * view of the host's files), or null when that uid is a real user here. Such an owner is outside
 * the namespace altogether, so no local user can be it. See user_namespaces(7).
 */
function unmappedOwner(): number | null {
  try {
    const overflow = Number(fs.readFileSync('/proc/sys/kernel/overflowuid', 'latin1').trim());
    const mapped = fs
      .readFileSync('/proc/self/uid_map', 'latin1')
      .split('\n')
      .map((line) => line.trim().split(/\s+/).map(Number))
      .some(([inside, , count]) => inside !== undefined && count !== undefined && overflow >= inside && overflow < inside + count);
    return Number.isInteger(overflow) && !mapped ? overflow : null;
  } catch {
    return null;
  }
}

/** Whether a level may hold a level of ours: owned by root or us, and not writable by others unless sticky. */
function checkAncestor(level: string, stat: fs.Stats, uid: number): void {
  if (!stat.isDirectory()) unsafe(level, 'not-directory');
  if (stat.uid !== 0 && stat.uid !== uid && stat.uid !== unmappedOwner()) unsafe(level, 'owner', { uid: stat.uid });
  if ((stat.mode & 0o022) !== 0 && (stat.mode & S_ISVTX) === 0) unsafe(level, 'writable', { mode: stat.mode & 0o7777 });
}

/** The lock directory itself: ours, and nobody else's business. */
function checkLeaf(level: string, stat: fs.Stats, uid: number): void {
  if (!stat.isDirectory()) unsafe(level, 'not-directory');
  if (stat.uid !== uid) unsafe(level, 'owner', { uid: stat.uid });
  if ((stat.mode & 0o077) !== 0) unsafe(level, 'access', { mode: stat.mode & 0o7777 });
}

function components(dir: string): string[] {
  return path.resolve(dir).split('/').filter(Boolean);
}

/**
 * Opens `dir` as described above, making missing levels 0700; the descriptor of the directory,
 * and the descriptor of its parent (for removing it later). Throws UnsafeLockDirError.
 */
export function walkLockDir(dir: string, uid: number): { fd: number; parent: number } {
  let names = components(dir);
  let links = 0;
  let fd = fs.openSync('/', fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  let parent = -1;
  const swap = (next: number): void => {
    if (parent >= 0) native.closeFd(parent);
    parent = fd;
    fd = next;
  };
  try {
    checkAncestor('/', fs.fstatSync(fd), uid);
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!;
      const level = `/${names.slice(0, i + 1).join('/')}`;
      const last = i === names.length - 1;
      let entry = native.statAt(fd, name);
      if (entry === null) {
        native.mkdirAt(fd, name, 0o700);
        entry = native.statAt(fd, name);
        if (entry === null) unsafe(level, 'changed');
      }
      if (entry.type === 'symlink') {
        // Only root or we could have made it, in a level nobody else may rename entries of.
        if (entry.uid !== 0 && entry.uid !== uid) unsafe(level, 'symlink', { uid: entry.uid });
        if (++links > MAX_SYMLINKS) unsafe(level, 'loop');
        const target = native.readLinkAt(fd, name);
        // Start again from `/` on the path it names (then every level of that is checked too).
        names = components(path.resolve(path.dirname(level), target, ...names.slice(i + 1)));
        swap(fs.openSync('/', fs.constants.O_RDONLY | fs.constants.O_DIRECTORY));
        i = -1;
        continue;
      }
      if (entry.type !== 'directory') unsafe(level, 'not-directory');
      let next: number;
      try {
        next = native.openDirAt(fd, name);
      } catch {
        // It was a directory a moment ago: someone replaced it.
        unsafe(level, 'changed');
      }
      swap(next);
      // What we opened is what counts, not what the name showed before.
      const stat = fs.fstatSync(fd);
      if (last) checkLeaf(level, stat, uid);
      else checkAncestor(level, stat, uid);
    }
    if (names.length === 0) checkLeaf('/', fs.fstatSync(fd), uid);
    return { fd, parent };
  } catch (error) {
    native.closeFd(fd);
    if (parent >= 0) native.closeFd(parent);
    if (error instanceof UnsafeLockDirError) throw error;
    throw new UnsafeLockDirError({ level: dir, reason: 'error', detail: (error as Error).message });
  }
}

/** Removes every entry of directory `fd` (lock files only: we never make subdirectories in it). */
function emptyDir(fd: number): void {
  // /proc/self/fd/N names the very directory the descriptor holds, whatever its path is now.
  for (const name of fs.readdirSync(`/proc/self/fd/${fd}`)) native.unlinkAt(fd, name, false);
}

/**
 * The lock directory to use: `requested` when it is safe, else a private one (reported in
 * `info.refused`). Throws only when not even a private directory could be made safe.
 */
export function openLockDirectory(requested: string, uid: number = process.getuid!()): LockDirectory {
  try {
    const { fd, parent } = walkLockDir(requested, uid);
    native.closeFd(parent);
    return { fd, info: { dir: path.resolve(requested), refused: null }, close: () => native.closeFd(fd) };
  } catch (error) {
    if (!(error instanceof UnsafeLockDirError)) throw error;
    return openPrivate(requested, error.problem, uid);
  }
}

function openPrivate(requested: string, problem: LockDirProblem, uid: number): LockDirectory {
  // mkdtemp makes a fresh 0700 directory with a name nobody could guess in advance; it is then
  // checked like any other (its parent may be a tmp anyone writes to).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `heph-jobs-${uid}-private-`));
  let opened: { fd: number; parent: number };
  try {
    opened = walkLockDir(dir, uid);
  } catch (error) {
    // Made a moment ago and still empty: nothing of ours is lost with it (rmdir removes nothing else).
    try {
      fs.rmdirSync(dir);
    } catch {
      // Gone or no longer empty: not ours to touch then.
    }
    throw new Error(
      `heph-jobs: the lock directory ${requested} is not safe (${problem.level}: ${problem.reason}), and neither is a private one (${(error as Error).message})`,
    );
  }
  const { fd, parent } = opened;
  return {
    fd,
    info: { dir, refused: { dir: path.resolve(requested), problem } },
    close: () => {
      try {
        emptyDir(fd);
        native.unlinkAt(parent, path.basename(dir), true);
      } finally {
        native.closeFd(fd);
        native.closeFd(parent);
      }
    },
  };
}
