/**
 * Resource locks held by the supervisor as OFD locks (fcntl F_OFD_SETLK) on one lock file per
 * resource, so that two runtimes on one machine exclude each other, and a dead supervisor's locks
 * are released by the kernel when (and only when) its process is gone. See fcntl(2).
 *
 * Byte layout of a lock file, so that `path:` nesting holds across processes too:
 *   byte 0                     the resource itself: write lock = exclusive, read lock = shared
 *   [X_INTENT, X_INTENT+SLOTS) one byte per lease holding something *exclusive below* this path
 *   [S_INTENT, S_INTENT+SLOTS) one byte per lease holding something *shared below* this path
 * Exclusive on P: write byte 0, read both intent regions (conflicts with anything held below P).
 * Shared on P:    read byte 0, read the exclusive-intent region (conflicts only with exclusive below).
 * Either, for every ancestor A: write this lease's own byte in A's matching intent region (leases
 * below A never conflict with each other there; a holder of A itself does).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { native } from '../native.js';
import type { LockDirectory } from './lock-dir.js';
import { cleanupLostSupervisor, type CleanupScope } from '../cleanup/lost-cleanup.js';
import { instanceAlive } from '../identity.js';
import { processStartTime } from '../platform/procfs.js';
import { instanceName, parseIdentity, type SupervisorIdentity } from '../../src/protocol/identity.js';
import type { LockResource } from '../../src/protocol/messages.js';
import { pathAncestors } from '../../src/protocol/resource-path.js';

const SLOTS = 2 ** 46;
const X_INTENT = 2 ** 47;
const S_INTENT = 2 ** 48;
/** Poll interval bounds while a lock is held elsewhere (no kernel event says an OFD lock was
 * released): short first so handover is quick, capped so a long wait costs little. */
const POLL_MIN_MS = 1;
const POLL_MAX_MS = 5;

interface LockStep {
  /** The lock file's name in the lock directory. */
  file: string;
  ranges: { exclusive: boolean; start: number; length: number }[];
}

/** Lock file name: readable prefix plus a hash of the exact resource string. */
export function lockFileName(resource: string): string {
  const slug = resource.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 48);
  const hash = crypto.createHash('sha256').update(resource).digest('hex').slice(0, 16);
  return `${slug}-${hash}.lock`;
}


let nextSlot = 0;

/** What a holder writes into a lock file (one JSON line). */
export interface HolderRecord {
  resource: string;
  /** The holding supervisor instance: pid, start time and boot (a recycled pid is not the holder). */
  pid: number;
  start: string | null;
  boot?: string;
  job: number | null;
  /** The job's cgroup, or the supervisor's subtree. */
  cgroup: string | null;
}

/**
 * The dead holders among `records`: each names a supervisor instance (pid, start time, boot); one
 * that is malformed (written by anyone who can write the file) or alive is nobody to clean up.
 */
function deadHolders(records: HolderRecord[]): SupervisorIdentity[] {
  const dead = new Map<string, SupervisorIdentity>();
  for (const record of records) {
    const identity = parseIdentity(record);
    if (identity !== null && !instanceAlive(identity)) dead.set(`${instanceName(identity)}@${identity.boot}`, identity);
  }
  return [...dead.values()];
}

/** Stops what is left of dead holders' jobs (their cgroup subtrees, and processes with their marker). */
async function stopDeadHolders(records: HolderRecord[], scope: CleanupScope): Promise<void> {
  for (const dead of deadHolders(records)) await cleanupLostSupervisor(dead, scope);
}

export class KernelLocks {
  private readonly held = new Map<number, number[]>();
  private readonly pending = new Map<number, () => void>();

  /** `dir`: opened and checked by openLockDirectory; every lock file is opened relative to it. */
  constructor(
    private readonly dir: LockDirectory,
    private readonly scope: CleanupScope = { cgroupParent: null },
  ) {}

  /** Takes every resource or none, retrying until all are free; `cancel(lease)` stops the wait. */
  async acquire(lease: number, resources: LockResource[], record: Record<string, unknown>): Promise<void> {
    if (this.held.has(lease) || this.pending.has(lease)) throw new Error(`lease ${lease} is already held or pending`);
    const steps = this.plan(resources, this.slotFor());
    let cancelled = false;
    this.pending.set(lease, () => {
      cancelled = true;
    });
    try {
      let delay = POLL_MIN_MS;
      for (;;) {
        if (cancelled) throw new Error(`lock request ${lease} was cancelled`);
        const fds = this.tryAll(steps);
        if (fds) {
          this.held.set(lease, fds);
          // The kernel dropped a dead supervisor's locks at once, but its jobs may still be running
          // (until their runtime stops them): stop them first, so the resource is really free.
          await stopDeadHolders(this.readRecords(resources, steps, fds), this.scope);
          this.writeRecords(resources, steps, fds, record);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, POLL_MAX_MS);
      }
    } finally {
      this.pending.delete(lease);
    }
  }

  /** One attempt, no waiting: true when every resource is now held by `lease`. */
  tryAcquire(lease: number, resources: LockResource[], record: Record<string, unknown>): boolean {
    if (this.held.has(lease) || this.pending.has(lease)) throw new Error(`lease ${lease} is already held or pending`);
    return this.attempt(lease, resources, this.plan(resources, this.slotFor()), record);
  }

  /** One try without the dead-holder check (tests of the byte layout use it). */
  private attempt(lease: number, resources: LockResource[], steps: LockStep[], record: Record<string, unknown>): boolean {
    const fds = this.tryAll(steps);
    if (!fds) return false;
    this.held.set(lease, fds);
    this.writeRecords(resources, steps, fds, record);
    return true;
  }

  cancel(lease: number): void {
    this.pending.get(lease)?.();
  }

  release(lease: number): void {
    this.cancel(lease);
    for (const fd of this.held.get(lease) ?? []) native.closeFd(fd);
    this.held.delete(lease);
  }

  /** At the supervisor's end: drops every lock and closes the directory (a private one is removed). */
  close(): void {
    for (const lease of [...this.held.keys()]) this.release(lease);
    this.dir.close();
  }

  get heldCount(): number {
    return this.held.size;
  }

  private slotFor(): number {
    // Unique per lease across every supervisor on the machine: our pid, then a per-process counter.
    return (process.pid * 2 ** 24 + (nextSlot++ % 2 ** 24)) % SLOTS;
  }

  private plan(resources: LockResource[], slot: number): LockStep[] {
    const steps = new Map<string, LockStep>();
    const step = (resource: string): LockStep => {
      const file = lockFileName(resource);
      let found = steps.get(file);
      if (!found) steps.set(file, (found = { file, ranges: [] }));
      return found;
    };
    for (const res of resources) {
      const exclusive = res.mode === 'exclusive';
      const own = step(res.resource);
      own.ranges.push({ exclusive, start: 0, length: 1 });
      if (res.kind !== 'path') continue;
      own.ranges.push({ exclusive: false, start: X_INTENT, length: SLOTS });
      if (exclusive) own.ranges.push({ exclusive: false, start: S_INTENT, length: SLOTS });
      for (const ancestor of pathAncestors(res.value)) {
        step(`path:${ancestor}`).ranges.push({ exclusive: true, start: (exclusive ? X_INTENT : S_INTENT) + slot, length: 1 });
      }
    }
    return [...steps.values()];
  }

  /** One attempt at the whole set: the fds holding it, or null (and nothing held). */
  private tryAll(steps: LockStep[]): number[] | null {
    const fds: number[] = [];
    try {
      for (const step of steps) {
        const fd = this.openLockFile(step.file);
        fds.push(fd);
        for (const range of step.ranges) {
          if (!native.lockRange(fd, range.exclusive, range.start, range.length)) {
            for (const held of fds) native.closeFd(held);
            return null;
          }
        }
      }
      return fds;
    } catch (error) {
      for (const held of fds) native.closeFd(held);
      throw error;
    }
  }

  /**
   * Opens lock file `name` in the lock directory, and makes sure it is what we would have made: a
   * regular file of ours with no other name (the directory is ours and 0700, so only root could
   * have put anything else there; it is refused all the same).
   */
  private openLockFile(name: string): number {
    const fd = native.lockOpenAt(this.dir.fd, name);
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile() || stat.uid !== process.getuid!() || stat.nlink !== 1) {
        throw new Error(`heph-jobs: the lock file ${name} in ${this.dir.info.dir} is not a regular file of this user's with one name`);
      }
      return fd;
    } catch (error) {
      native.closeFd(fd);
      throw error;
    }
  }

  /** The fd of each resource's own lock file. */
  private ownFiles(resources: LockResource[], steps: LockStep[], fds: number[]): { res: LockResource; fd: number }[] {
    const out: { res: LockResource; fd: number }[] = [];
    for (const res of resources) {
      const fd = fds[steps.findIndex((step) => step.file === lockFileName(res.resource))];
      if (fd !== undefined) out.push({ res, fd });
    }
    return out;
  }

  /** The holder records left in our resources' lock files by whoever held them before. */
  private readRecords(resources: LockResource[], steps: LockStep[], fds: number[]): HolderRecord[] {
    const records: HolderRecord[] = [];
    for (const { fd } of this.ownFiles(resources, steps, fds)) {
      let text = '';
      try {
        const size = fs.fstatSync(fd).size;
        const buffer = Buffer.alloc(Math.min(size, 1 << 20));
        fs.readSync(fd, buffer, 0, buffer.length, 0);
        text = buffer.toString('utf8');
      } catch {
        continue;
      }
      for (const line of text.split('\n')) {
        try {
          const parsed = JSON.parse(line) as HolderRecord;
          if (typeof parsed.pid === 'number') records.push(parsed);
        } catch {
          // A torn or foreign line: not a record.
        }
      }
    }
    return records;
  }

  /**
   * Who holds each resource, for diagnostics and for finding a dead holder's jobs: an exclusive
   * holder replaces the file's records; a shared one adds its line beside the other sharers'.
   */
  private writeRecords(resources: LockResource[], steps: LockStep[], fds: number[], record: Record<string, unknown>): void {
    for (const { res, fd } of this.ownFiles(resources, steps, fds)) {
      const line = Buffer.from(
        `${JSON.stringify({ resource: res.resource, mode: res.mode, start: processStartTime(process.pid), ...record, since: Date.now() })}\n`,
      );
      try {
        if (res.mode === 'exclusive') {
          fs.ftruncateSync(fd, 0);
          fs.writeSync(fd, line, 0, line.length, 0);
        } else {
          fs.writeSync(fd, line, 0, line.length, fs.fstatSync(fd).size);
        }
      } catch {
        // Diagnostics only.
      }
    }
  }
}
