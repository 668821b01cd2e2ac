/**
 * Small kernel files of one cgroup read again and again (cgroup.procs, cpu.stat, memory.current,
 * cgroup.stat: every status of a running job reads them), each kept open and read with pread at
 * offset 0. A cgroup file is a seq_file: a read from offset 0 shows it afresh, as a fresh open
 * would. The open and close are most of a read's cost (a path walk through cgroupfs), more so in a
 * process just woken from idle, as it is when a waiting status is answered.
 *
 * A kept descriptor does not hold the cgroup up: rmdir succeeds, and a read then fails (ENODEV)
 * and gives null, as a read of a removed file would. `close` gives every descriptor back (the
 * job's cleanup); a read after it opens the file for that read only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { keptClosed, mayKeep, registerKept, unregisterKept, type KeptHolder } from './descriptors.js';

/**
 * A file that could not be opened: not tried again. A job cgroup's files are those of the core and
 * of the controllers enabled in its parent's cgroup.subtree_control, our subtree's, which the
 * supervisor never writes: `memory.current` is there from the mkdir on or not at all.
 */
const ABSENT = -1;

/**
 * A read this short was the file's last. A seq_file read stops short of what was asked at the end
 * of the file, or when the next record does not fit in the kernel's buffer of at least a page
 * (4096 bytes): the records of the files read here (a pid, a line of statm, stat or cpu.stat) are
 * under 256 bytes, so a read of at most 3840 can only be the end (platform/ports.ts reads
 * /proc/net/tcp by the same rule).
 */
const SURELY_LAST_READ = 4096 - 256;

/**
 * The whole of a small seq_file open at `fd`, read from offset 0 (pread: a kept descriptor's
 * position does not matter), into `buffer`; null when it does not fit.
 */
export function readSeqFile(fd: number, buffer: Buffer): string | null {
  let length = 0;
  for (;;) {
    const count = fs.readSync(fd, buffer, length, buffer.length - length, length);
    length += count;
    if (count === 0 || count <= SURELY_LAST_READ) return length === buffer.length ? null : buffer.toString('latin1', 0, length);
    if (length === buffer.length) return null; // not a small file: no guesswork
  }
}

export class KeptFiles implements KeptHolder {
  private readonly fds = new Map<string, number>();
  private closed = false;

  constructor(readonly dir: string) {
    registerKept(this);
  }

  /** The whole of `name` (a file of `dir` under a page long), or null when it is absent or gone. */
  read(name: string, buffer: Buffer): string | null {
    const kept = this.fds.get(name);
    if (kept === ABSENT) return null;
    let fd = kept;
    if (fd === undefined) {
      try {
        fd = fs.openSync(path.join(this.dir, name), 'r');
      } catch (error) {
        // Only a file that is not there is not tried again (EMFILE is no answer about the file).
        if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !this.closed) this.fds.set(name, ABSENT);
        return null;
      }
      // Kept within the descriptor budget only (platform/descriptors.ts); else open for this read.
      if (!this.closed && mayKeep(fd)) this.fds.set(name, fd);
    }
    try {
      return readSeqFile(fd, buffer);
    } catch {
      return null;
    } finally {
      if (this.fds.get(name) !== fd) fs.closeSync(fd);
    }
  }

  /** Closes every kept descriptor; later reads open and close their file each time. */
  close(): void {
    this.closed = true;
    this.giveBack();
    unregisterKept(this);
  }

  /** Closes every kept descriptor (files known absent stay known). */
  giveBack(): void {
    for (const [name, fd] of this.fds) {
      if (fd === ABSENT) continue;
      fs.closeSync(fd);
      keptClosed(1);
      this.fds.delete(name);
    }
  }
}

/**
 * Most member files kept open by the whole supervisor, over all its jobs: 64 jobs of thousands of
 * processes must not hold thousands of descriptors, which a spawn's pipes need too. Fewer under a
 * low RLIMIT_NOFILE (platform/descriptors.ts). Reads past the bound open and close their file each
 * time, as without keeping.
 */
export const MAX_KEPT_MEMBER_FILES = 256;

/** Member files kept open now, by every job's KeptMemberFiles. */
let keptMemberFiles = 0;

/**
 * Files of a job's processes (/proc/PID/statm where the cgroup has no memory.current, /proc/PID/stat
 * where it has no cpu.stat) read at every status, kept open and read with pread as the cgroup
 * files above: the open and close of a /proc path were about half of such a read when the
 * supervisor had just woken to answer a waiting status. A /proc/PID descriptor is bound to the
 * process, not to its number: once that process is gone a read fails (ESRCH) and never shows a
 * process that got the pid later; the file is then opened afresh, once, for the process that has
 * the pid now. `keepOnly` closes those of processes that are no longer members.
 */
export class KeptMemberFiles implements KeptHolder {
  private readonly fds = new Map<number, Map<string, number>>();
  private count = 0;
  private closed = false;

  constructor() {
    registerKept(this);
  }

  /** The whole of /proc/PID/`name` as it is now, or null when the process is gone. */
  read(pid: number, name: string, buffer: Buffer): string | null {
    const own = this.fds.get(pid);
    const kept = own?.get(name);
    if (kept !== undefined) {
      const text = readOrNull(kept, buffer);
      if (text !== null) return text;
      own!.delete(name);
      this.forget(1);
      fs.closeSync(kept);
    }
    let fd: number;
    try {
      fd = fs.openSync(`/proc/${pid}/${name}`, 'r');
    } catch {
      return null;
    }
    const text = readOrNull(fd, buffer);
    if (text === null || this.closed || keptMemberFiles >= MAX_KEPT_MEMBER_FILES || !mayKeep(fd)) {
      fs.closeSync(fd);
      return text;
    }
    if (own) own.set(name, fd);
    else this.fds.set(pid, new Map([[name, fd]]));
    this.count++;
    keptMemberFiles++;
    return text;
  }

  /** Closes the descriptors of every process not in `pids` (the members just listed). */
  keepOnly(pids: readonly number[]): void {
    if (this.count === 0) return;
    const members = new Set(pids); // a job may have thousands: no scan of them per kept pid
    for (const [pid, own] of this.fds) {
      if (members.has(pid)) continue;
      for (const fd of own.values()) fs.closeSync(fd);
      this.forget(own.size);
      this.fds.delete(pid);
    }
  }

  private forget(closed: number): void {
    this.count -= closed;
    keptMemberFiles -= closed;
    keptClosed(closed);
  }

  /** Closes every kept descriptor; later reads open and close their file each time. */
  close(): void {
    this.closed = true;
    this.giveBack();
    unregisterKept(this);
  }

  /** Closes every kept descriptor; later reads may keep theirs again. */
  giveBack(): void {
    this.keepOnly([]);
  }
}

/** A /proc file's text read at `fd`; null when the read fails or shows nothing (the process is gone). */
function readOrNull(fd: number, buffer: Buffer): string | null {
  try {
    const text = readSeqFile(fd, buffer);
    return text === '' ? null : text;
  } catch {
    return null;
  }
}
