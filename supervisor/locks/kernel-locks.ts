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
 *   RECORD_MUTEX               sharers' edits of the holder records (records.ts)
 *
 * Every lease's descriptors are also kept in the lock vault (vault.ts), so that its locks outlive
 * this process while its runtime lives; a fresh supervisor adopts them (issue 12, item 3). A lease
 * is released by unlocking its descriptions, which every copy shares, so a copy still queued in the
 * vault locks nothing.
 */
import fs from 'node:fs';
import { native } from '../native.js';
import { randomHex, randomInt, sha256Hex } from './random.js';
import type { LockDirectory } from './lock-dir.js';
import { clearRecord, readRecords, writeRecord, type HolderRecord, type LockMode } from './records.js';
import type { LockVault, VaultLease } from './vault.js';
import { cleanupLostSupervisor, type CleanupScope } from '../cleanup/lost-cleanup.js';
import { instanceAlive, ownIdentity } from '../identity.js';
import { instanceName, type SupervisorIdentity } from '../../src/protocol/identity.js';
import { LOCK_MODES, type LockResource } from '../../src/protocol/messages.js';
import { LockVaultFullError } from '../../src/protocol/errors.js';
import { pathAncestors } from '../../src/protocol/resource-path.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { warn } from '../warn.js';
import { DirectoryChanges } from './dir-changes.js';
import { descriptorLimit, reserveForLater, room } from '../platform/descriptors.js';
import { BadResourceError } from '../../src/protocol/errors.js';

const SLOTS = 2 ** 46;
const X_INTENT = 2 ** 47;
const S_INTENT = 2 ** 48;
/** How a wait looks again while a lock is held elsewhere. */
export interface LockPolling {
  /** Poll interval bounds (no kernel event says an OFD lock was released): short first, capped so
   * that a holder that died (and wrote nothing) is noticed soon. */
  minMs: number;
  maxMs: number;
  /** Also retry at each change of the lock directory (a holder's release clears its record): dir-changes.ts. */
  onDirectoryChange: boolean;
}

export const LOCK_POLLING: LockPolling = { minMs: 1, maxMs: 5, onDirectoryChange: true };

interface LockStep {
  /** The lock file's name in the lock directory. */
  file: string;
  ranges: { exclusive: boolean; start: number; length: number }[];
}

/** Lock file name: readable prefix plus a hash of the exact resource string. */
export function lockFileName(resource: string): string {
  const slug = resource.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 48);
  const hash = sha256Hex(resource).slice(0, 16);
  return `${slug}-${hash}.lock`;
}

/** Who asks for a lease (the runtime's label for it, and its job, if it is a job's). */
export interface LeaseOwner {
  label: string;
  job: number | null;
}

/** A resource's own lock file in a lease: where its holder record goes. */
interface OwnFile {
  /** Index into the lease's descriptors. */
  index: number;
  resource: string;
  mode: LockMode;
}

interface HeldLease {
  fds: number[];
  files: string[];
  own: OwnFile[];
  /** Marks this lease's line in shared records. */
  token: string;
  owner: LeaseOwner;
  /** Dead instances this lease was adopted from: named in its records until it is released. */
  predecessors: SupervisorIdentity[];
}

/** What the vault keeps beside a lease's descriptors, to release it after an adoption. */
interface LeaseMeta {
  own: OwnFile[];
  token: string;
  owner: LeaseOwner;
}

/** `meta` as a fresh supervisor reads it back from the vault, or null when it is not well formed. */
function parseMeta(meta: unknown, fds: number): LeaseMeta | null {
  const value = meta as Partial<LeaseMeta> | null;
  if (typeof value !== 'object' || value === null || typeof value.token !== 'string' || !/^[0-9a-f]{16}$/.test(value.token)) return null;
  const owner = value.owner;
  if (typeof owner?.label !== 'string' || (owner.job !== null && !Number.isSafeInteger(owner.job))) return null;
  if (!Array.isArray(value.own)) return null;
  for (const own of value.own) {
    if (!Number.isSafeInteger(own?.index) || own.index < 0 || own.index >= fds || typeof own.resource !== 'string' || !LOCK_MODES.includes(own.mode)) return null;
  }
  return { own: value.own, token: value.token, owner: { label: owner.label, job: owner.job } };
}

/**
 * The instances among `records`' holders that are dead (each record is validated: a holder is a
 * well-formed identity, and "dead" is provable only on this boot, by pid and start time).
 */
function deadHolders(records: HolderRecord[]): SupervisorIdentity[] {
  const dead = new Map<string, SupervisorIdentity>();
  for (const { holder, predecessors } of records) {
    for (const instance of [holder, ...(predecessors ?? [])]) {
      if (!instanceAlive(instance)) dead.set(`${instanceName(instance)}@${instance.boot}`, instance);
    }
  }
  return [...dead.values()];
}

/**
 * Most lock files (and so descriptors) one lease may take: a quarter of the descriptor limit, and
 * never more than MAX_LEASE_FILES, so that one call cannot fill the table or a small shared tmpfs.
 */
export function maxLeaseFiles(limit = descriptorLimit()): number {
  return Math.max(1, Math.min(MAX_LEASE_FILES, Math.floor(limit / 4)));
}
const MAX_LEASE_FILES = 512;

/** Attempts at opening and locking a lock file that a releasing holder removes meanwhile. */
const REMOVED_RETRIES = 100;

/** Most descriptors one vault message carries (the kernel's SCM_MAX_FD): a store receives one at a time. */
const VAULT_MESSAGE_FDS = 253;

/** Longest wait for a dying exclusive holder to finish exiting. */
const DYING_HOLDER_MS = 2000;

/**
 * An exclusive holder clears its record before it unlocks, so a record of one that is still there
 * once we hold the lock is a holder that died holding it. The kernel closes a dying process's
 * descriptors (dropping its locks) before the process turns into a zombie, so for a moment it can
 * still look alive: wait (bounded) until it no longer does, so it is not taken for a live holder.
 */
async function dyingHoldersGone(records: HolderRecord[]): Promise<void> {
  const deadline = Date.now() + DYING_HOLDER_MS;
  while (records.some((record) => record.mode === 'exclusive' && instanceAlive(record.holder)) && Date.now() < deadline) await sleep(5);
}

function sameInstance(a: SupervisorIdentity, b: SupervisorIdentity): boolean {
  return a.pid === b.pid && a.start === b.start && a.boot === b.boot;
}

function closeAll(fds: readonly number[]): void {
  for (const fd of fds) native.closeFd(fd);
}

/** The refusal of `entry`, which the vault had no room for beside the other leases `held`. */
function vaultFull(entry: HeldLease, held: Iterable<HeldLease>): LockVaultFullError {
  const others = [...held].filter((other) => other !== entry);
  const descriptors = others.reduce((sum, other) => sum + other.fds.length, 0);
  let buffer = 'its sockets\' send buffers';
  try {
    buffer += ` (net.core.wmem_default: ${fs.readFileSync('/proc/sys/net/core/wmem_default', 'latin1').trim()} bytes each)`;
  } catch {
    // Only the figure is missing.
  }
  return new LockVaultFullError(
    `the lock vault has no room to keep this lease of ${entry.own.length} resources (${entry.fds.length} lock files) through a crash of the supervisor, ` +
      `so it is refused: ${others.length} other leases (${descriptors} lock files) and this one's notes fill ${buffer}, or this user's descriptors in flight reach RLIMIT_NOFILE. ` +
      'Release a lease, or ask for fewer resources (or shorter names) at once.',
  );
}

export class KernelLocks {
  private readonly held = new Map<number, HeldLease>();
  private readonly pending = new Map<number, () => void>();

  /**
   * `dir`: opened and checked by openLockDirectory; every lock file is opened relative to it.
   * `scope`: where a dead holder's leftovers may be looked for. `vault`: where leases are kept so
   * that they outlive us (null: not kept; a crash then releases them).
   */
  constructor(
    private readonly dir: LockDirectory,
    private readonly scope: CleanupScope = { cgroupParent: null },
    private readonly vault: LockVault | null = null,
    private readonly polling: LockPolling = LOCK_POLLING,
  ) {
    this.changes = polling.onDirectoryChange ? new DirectoryChanges(dir.fd) : null;
    // Each store takes the previous snapshot off the vault, one message at a time: that room stays free.
    if (vault) reserveForLater(() => Math.min(VAULT_MESSAGE_FDS, this.heldFds()));
  }

  /** Descriptors the held leases keep open. */
  private heldFds(): number {
    let count = 0;
    for (const entry of this.held.values()) count += entry.fds.length;
    return count;
  }

  private readonly changes: DirectoryChanges | null;

  /** Takes every resource or none, retrying until all are free; `cancel(lease)` stops the wait. */
  async acquire(lease: number, resources: LockResource[], owner: LeaseOwner): Promise<void> {
    if (this.held.has(lease) || this.pending.has(lease)) throw new Error(`lease ${lease} is already held or pending`);
    const steps = this.plan(resources, this.slotFor());
    let cancelled = false;
    const abort = new AbortController();
    this.pending.set(lease, () => {
      cancelled = true;
      abort.abort(); // the wait ends now, not at its next look
    });
    try {
      let delay = this.polling.minMs;
      for (;;) {
        if (cancelled) throw new Error(`lock request ${lease} was cancelled`);
        const fds = this.tryAll(steps);
        if (fds) {
          const entry = this.hold(lease, resources, steps, fds, owner);
          try {
            // The kernel dropped a dead holder's locks when its process (and its runtime's carrier)
            // went, but its jobs may still be running: stop them first, so the resource is really
            // free. Should that fail, the locks go too: a failed check must not keep them.
            const records = this.recordsOf(entry);
            await dyingHoldersGone(records);
            const dead = deadHolders(records);
            for (const instance of dead) await cleanupLostSupervisor(instance, this.scope);
            if (cancelled || this.held.get(lease) !== entry) throw new Error(`lock request ${lease} was cancelled`);
            this.writeRecords(entry, (record) => dead.some((instance) => instanceName(instance) === instanceName(record.holder) && instance.boot === record.holder.boot));
            // A lease the vault cannot keep would not outlive a crash: refused now, not left open then.
            if (!this.store()) throw vaultFull(entry, this.held.values());
          } catch (error) {
            // (Unless a release during the cleanup dropped it already: its fds are closed by now.)
            if (this.held.get(lease) === entry) this.drop(lease, entry);
            throw error;
          }
          return;
        }
        // After a change, the next look is soon again: the release that changed the directory
        // drops its locks just after clearing its record.
        const changed = await this.retryWait(delay, abort.signal);
        delay = changed ? this.polling.minMs : Math.min(delay * 2, this.polling.maxMs);
      }
    } finally {
      this.pending.delete(lease);
    }
  }

  /** Resolves after `ms` (false), at a change of the lock directory (true), or once `signal` aborts. */
  private retryWait(ms: number, signal: AbortSignal): Promise<boolean> {
    if (this.changes) return this.changes.next(ms, signal);
    return sleep(ms, undefined, { signal }).then(
      () => false,
      () => false,
    );
  }

  /** One attempt, no waiting and no dead-holder check (tests of the byte layout): true when held. */
  tryAcquire(lease: number, resources: LockResource[], owner: LeaseOwner): boolean {
    if (this.held.has(lease) || this.pending.has(lease)) throw new Error(`lease ${lease} is already held or pending`);
    const steps = this.plan(resources, this.slotFor());
    const fds = this.tryAll(steps);
    if (!fds) return false;
    const entry = this.hold(lease, resources, steps, fds, owner);
    this.writeRecords(entry);
    if (!this.store()) {
      this.drop(lease, entry);
      throw vaultFull(entry, this.held.values());
    }
    return true;
  }

  cancel(lease: number): void {
    this.pending.get(lease)?.();
  }

  /** Releases `lease`: its records cleared first, then its locks dropped (in every copy), then closed. */
  release(lease: number): void {
    this.cancel(lease);
    const entry = this.held.get(lease);
    if (!entry) return;
    this.drop(lease, entry);
    // A smaller snapshot always fits where the larger one did.
    this.store();
  }

  /**
   * Takes over the leases a dead supervisor of our runtime left in the vault: holds them as our
   * own (their locks never went) and names us in their records. Returns their lease numbers.
   */
  adopt(): number[] {
    if (!this.vault) return [];
    const adopted: number[] = [];
    for (const found of this.vault.adopt()) {
      const meta = parseMeta(found.meta, found.fds.length);
      if (this.held.has(found.lease)) {
        closeAll(found.fds);
        continue;
      }
      const entry: HeldLease = {
        fds: found.fds,
        files: found.files,
        own: meta?.own ?? [],
        token: meta?.token ?? randomHex(8),
        owner: meta?.owner ?? { label: 'adopted', job: null },
        predecessors: [],
      };
      // The supervisor we adopt from is dead, and its jobs' leftovers may still run (its cleanup is
      // under way elsewhere, or will never finish if our runtime dies too): our records keep
      // naming it, and whom it had adopted from, so a later taker stops what they left as well.
      for (const previous of this.recordsOf(entry)) {
        if (previous.token !== entry.token) continue;
        for (const instance of [previous.holder, ...(previous.predecessors ?? [])]) {
          if (!entry.predecessors.some((known) => sameInstance(known, instance))) entry.predecessors.push(instance);
        }
      }
      this.held.set(found.lease, entry);
      this.writeRecords(entry);
      adopted.push(found.lease);
    }
    return adopted;
  }

  /**
   * At the supervisor's end: clears the records and closes the descriptors, without unlocking:
   * when the runtime ends, its carrier (and so the vault) goes with it and the locks with that;
   * when it lives, the vault keeps them for a fresh supervisor. The directory is closed too.
   */
  close(): void {
    for (const entry of this.held.values()) {
      this.clearRecords(entry);
      closeAll(entry.fds);
    }
    this.held.clear();
    this.changes?.close();
    this.vault?.close();
    this.dir.close();
  }

  get heldCount(): number {
    return this.held.size;
  }

  private hold(lease: number, resources: LockResource[], steps: LockStep[], fds: number[], owner: LeaseOwner): HeldLease {
    const files = steps.map((step) => step.file);
    const own = resources.map((res) => ({ index: files.indexOf(lockFileName(res.resource)), resource: res.resource, mode: res.mode }));
    const entry: HeldLease = { fds, files, own, token: randomHex(8), owner, predecessors: [] };
    this.held.set(lease, entry);
    return entry;
  }

  /** Clears the records and drops the locks of a lease (every copy of its descriptions), then closes it. */
  private drop(lease: number, entry: HeldLease): void {
    this.held.delete(lease);
    this.clearRecords(entry);
    for (const fd of entry.fds) native.unlockRange(fd, 0, 0);
    entry.fds.forEach((fd, index) => this.removeIfUnused(fd, entry.files[index]!));
    closeAll(entry.fds);
  }

  /** Puts what we hold into the vault; false when it did not fit (the vault then keeps what it kept). */
  private store(): boolean {
    if (!this.vault) return true;
    const leases: VaultLease[] = [...this.held].map(([lease, entry]) => ({
      lease,
      files: entry.files,
      fds: entry.fds,
      meta: { own: entry.own, token: entry.token, owner: entry.owner } satisfies LeaseMeta,
    }));
    return this.vault.store(leases);
  }

  /** The records previous holders left in the lease's own files. */
  private recordsOf(entry: HeldLease): HolderRecord[] {
    return entry.own.flatMap(({ index, resource, mode }) => readRecords(entry.fds[index]!, resource, mode));
  }

  /** Names us as the holder in the lease's own files; `gone` says which other records to drop. */
  private writeRecords(entry: HeldLease, gone?: (record: HolderRecord) => boolean): void {
    for (const { index, resource, mode } of entry.own) {
      const record: HolderRecord = {
        resource,
        mode,
        holder: ownIdentity(),
        token: entry.token,
        owner: entry.owner.label,
        job: entry.owner.job,
        since: Date.now(),
        ...(entry.predecessors.length > 0 ? { predecessors: entry.predecessors } : {}),
      };
      if (!writeRecord(entry.fds[index]!, record, gone)) warn(`could not record the holder of ${resource}`);
    }
  }

  private clearRecords(entry: HeldLease): void {
    for (const { index, resource, mode } of entry.own) {
      if (!clearRecord(entry.fds[index]!, resource, mode, entry.token)) warn(`could not clear the record of ${resource}`);
    }
  }

  private slotFor(): number {
    // One byte per lease in an ancestor's intent region: random, so that no two leases anywhere on
    // the machine share one (a collision would only make one wait for the other).
    return randomInt(0, 2 ** 46 - 1);
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
    const limit = descriptorLimit();
    if (steps.size > maxLeaseFiles(limit)) {
      throw new BadResourceError(
        `these locks need ${steps.size} lock files (a path: lock takes one for its path and one for each directory above it, ` +
          `shared between the locks of a call), and one lease may take at most ${maxLeaseFiles(limit)} lock files ` +
          `under the supervisor's descriptor limit of ${limit} (RLIMIT_NOFILE); ask for fewer paths, or paths less deep`,
      );
    }
    return [...steps.values()];
  }

  /** One attempt at the whole set: the fds holding it, or null (and nothing held). */
  private tryAll(steps: LockStep[]): number[] | null {
    // Its files, and the vault's later stores (each takes one message of held descriptors off at a time).
    room('the lease', steps.length, this.vault ? Math.min(VAULT_MESSAGE_FDS, this.heldFds() + steps.length) : 0);
    const fds: number[] = [];
    try {
      for (const step of steps) {
        const fd = this.openAndLock(step, fds);
        if (fd === null) {
          closeAll(fds);
          return null;
        }
      }
      return fds;
    } catch (error) {
      closeAll(fds);
      throw error;
    }
  }

  /**
   * Opens `step`'s lock file and takes its ranges: its descriptor (also pushed onto `fds`), or null
   * when one is held elsewhere. A file a releasing holder removed between our open and our locks
   * (removeIfUnused) is no longer linked once we hold them: it is opened afresh.
   */
  private openAndLock(step: LockStep, fds: number[]): number | null {
    for (let attempt = 0; ; attempt++) {
      const fd = this.openLockFile(step.file);
      fds.push(fd);
      for (const range of step.ranges) {
        if (!native.lockRange(fd, range.exclusive, range.start, range.length)) return null;
      }
      if (fs.fstatSync(fd).nlink > 0) return fd;
      fds.pop();
      native.closeFd(fd);
      if (attempt >= REMOVED_RETRIES) throw new Error(`heph-jobs: the lock file ${step.file} in ${this.dir.info.dir} was removed ${REMOVED_RETRIES} times in a row while it was being locked`);
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
      // No name at all (nlink 0) is a file a release removed just after our open: openAndLock opens it afresh.
      if (!stat.isFile() || stat.uid !== process.getuid!() || stat.nlink > 1) {
        throw new Error(`heph-jobs: the lock file ${name} in ${this.dir.info.dir} is not a regular file of this user's with one name`);
      }
      return fd;
    } catch (error) {
      native.closeFd(fd);
      throw error;
    }
  }

  /**
   * Removes lock file `name` (open at `fd`, unlocked by us) when no one else uses it: a write lock
   * on the whole file proves no other description holds or is taking a lock on any byte of it, and
   * an empty file holds no record of a holder that died. A taker that opened it just before checks,
   * once its locks are taken, that it is still linked (openAndLock), so it never holds a removed file.
   */
  private removeIfUnused(fd: number, name: string): void {
    try {
      if (!native.lockRange(fd, true, 0, 0)) return;
      const own = fs.fstatSync(fd);
      if (own.nlink !== 1 || own.size !== 0) return;
      // The name must still be this very file (through our descriptor of the directory).
      const named = fs.lstatSync(`/proc/self/fd/${this.dir.fd}/${name}`, { throwIfNoEntry: false });
      if (named?.ino === own.ino && named.dev === own.dev) native.unlinkAt(this.dir.fd, name, false);
    } catch (error) {
      warn(`could not remove the unused lock file ${name}: ${(error as Error).message}`);
    } finally {
      native.unlockRange(fd, 0, 0);
    }
  }
}
