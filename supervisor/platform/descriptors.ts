/**
 * The supervisor's descriptors, bounded by its real RLIMIT_NOFILE (issue 28, items 5 and 6): a
 * limit as low as 64 must still leave room to list /proc, signal a job's processes and clean up
 * after them, so that a kill and the session's end always work.
 *
 * - Kept descriptors (cgroup and /proc files kept open for the next status: kept-files.ts) are an
 *   optimisation: at most an eighth of the limit, never in the last stretch of the table, and all
 *   given back when a spawn or a lease needs the room.
 * - A spawn or a lease first asks `room` for what it will open; it is refused (EMFILE, with the
 *   counts) when that would leave fewer than RESERVED_DESCRIPTORS free.
 */
import fs from 'node:fs';

/**
 * Left free for kills and cleanup: a scan of /proc holds a directory and a file at once, a signal
 * a pidfd, cgroup mode's kill a cgroup.kill, and a channel reply or warning may need one more.
 */
export const RESERVED_DESCRIPTORS = 8;

/** At most what a job's spawn opens on top of what the job keeps: three pipes (both ends), a pidfd, a terminal's pair. */
export const SPAWN_DESCRIPTORS = 9;

/** When the limit is read again: an outside `prlimit` may change it at any time. */
const LIMIT_TTL_MS = 1000;

let cachedLimit: { value: number; at: number } | null = null;

/** The soft RLIMIT_NOFILE as /proc/self/limits shows it (Node raises it to the hard limit at its start). */
export function descriptorLimit(): number {
  const now = Date.now();
  if (cachedLimit !== null && now - cachedLimit.at < LIMIT_TTL_MS) return cachedLimit.value;
  let value = 1024;
  try {
    const line = /^Max open files\s+(\d+|unlimited)\s/m.exec(fs.readFileSync('/proc/self/limits', 'latin1'))?.[1];
    if (line !== undefined) value = line === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(line);
  } catch {
    // No room to read it even: the last value, or the usual default.
    value = cachedLimit?.value ?? value;
  }
  cachedLimit = { value, at: now };
  return value;
}

/** Descriptors open now (the listing's own directory descriptor not counted); null when it cannot be listed. */
export function openDescriptorCount(): number | null {
  try {
    return fs.readdirSync('/proc/self/fd').length - 1;
  } catch {
    return null;
  }
}

/** What holds kept descriptors, so that their room can be taken back. */
export interface KeptHolder {
  /** Closes every kept descriptor (later reads open their file for that read, or keep it again). */
  giveBack(): void;
}

const holders = new Set<KeptHolder>();
let keptCount = 0;

export function registerKept(holder: KeptHolder): void {
  holders.add(holder);
}

export function unregisterKept(holder: KeptHolder): void {
  holders.delete(holder);
}

/** Whether the descriptor `fd`, just opened, may be kept open beyond its use (counted when true). */
export function mayKeep(fd: number): boolean {
  const limit = descriptorLimit();
  // Descriptors are allocated lowest first: a high number means the table is nearly full.
  if (keptCount >= Math.floor(limit / 8) || fd >= limit - RESERVED_DESCRIPTORS - 2 * SPAWN_DESCRIPTORS) return false;
  keptCount++;
  return true;
}

/** `count` kept descriptors were closed. */
export function keptClosed(count: number): void {
  keptCount = Math.max(0, keptCount - count);
}

/** Kept descriptors now (tests). */
export function keptDescriptorCount(): number {
  return keptCount;
}

/**
 * Descriptors some holder needs free later, beyond RESERVED_DESCRIPTORS: the lock vault takes the
 * previous snapshot of the held lock descriptors off its queue at each change (locks/kernel-locks.ts).
 */
let laterNeed: () => number = () => 0;

export function reserveForLater(need: () => number): void {
  laterNeed = need;
}

/** Why `room` refused: an error with code EMFILE, as the kernel's own refusal would have. */
export class DescriptorLimitError extends Error {
  readonly code = 'EMFILE';
  readonly errno = 24;
  constructor(what: string, wanted: number, open: number, limit: number, kept: number) {
    super(
      `EMFILE: ${what} needs ${wanted} more file descriptors, and the supervisor has ${open} of its limit of ${limit} ` +
        `(RLIMIT_NOFILE) open, and ${kept} must stay free for kills, cleanup and the lock vault`,
    );
  }
}

/**
 * Makes sure `wanted` more descriptors can be opened with RESERVED_DESCRIPTORS, and what a holder
 * needs later (`later`, else reserveForLater's), still free after: gives kept descriptors back
 * first if that makes the room; otherwise throws DescriptorLimitError.
 */
export function room(what: string, wanted: number, later = laterNeed()): void {
  const limit = descriptorLimit();
  const free = RESERVED_DESCRIPTORS + later;
  // A count of the table costs about half a spawn: a recent one, plus what was granted since,
  // does instead while that stays under half the limit (what else opens is far less).
  const now = Date.now();
  if (counted !== null && now - counted.at < COUNT_TTL_MS && counted.open + grantedSince + wanted + free <= limit / 2) {
    grantedSince += wanted;
    return;
  }
  let open = openDescriptorCount();
  if (open === null || open + wanted + free > limit) {
    if (keptCount > 0) for (const holder of holders) holder.giveBack();
    open = openDescriptorCount();
  }
  if (open === null || open + wanted + free > limit) {
    counted = null;
    throw new DescriptorLimitError(what, wanted, open ?? limit, limit, free);
  }
  counted = { open, at: now };
  grantedSince = wanted;
}

/** The last count of the table, and descriptors granted by `room` since. */
let counted: { open: number; at: number } | null = null;
let grantedSince = 0;
const COUNT_TTL_MS = 1000;
