/**
 * Which supervisor instance this is, and whether another one is alive: read from /proc (the
 * process's start time on the host's boot clock, whatever our time namespace) and
 * /proc/sys/kernel/random/boot_id. See
 * src/protocol/identity.ts for why a pid alone never names a supervisor.
 */
import fs from 'node:fs';
import type { SupervisorIdentity } from '../src/protocol/identity.js';
import { processStartTime, readProcStat, sameStartTime } from './platform/procfs.js';

export type { SupervisorIdentity };

const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

let boot: string | null = null;

/** This boot's id (a UUID the kernel makes at boot; it never changes until the next one). */
export function bootId(): string {
  boot ??= fs.readFileSync(BOOT_ID_FILE, 'latin1').trim();
  return boot;
}

/** The identity of process `pid` as it is now (its start time on this boot); null when it is gone. */
export function identityOf(pid: number): SupervisorIdentity | null {
  const start = processStartTime(pid);
  return start === null ? null : { pid, start, boot: bootId() };
}

let own: SupervisorIdentity | null = null;

/** This supervisor's identity (read once: it cannot change while we run). */
export function ownIdentity(): SupervisorIdentity {
  own ??= identityOf(process.pid);
  if (own === null) throw new Error('cannot read /proc/self/stat');
  return own;
}

/**
 * Whether instance `identity` still runs: on this boot, its pid names a process with the same
 * start time, and that process has not exited (a zombie has: its children were reparented and its
 * locks dropped). An instance found dead can never come back: a pid and start time are not given
 * out twice in one boot. One of another boot is dead (and nothing of it can still exist).
 */
export function instanceAlive(identity: SupervisorIdentity): boolean {
  if (identity.boot !== bootId()) return false;
  if (!sameStartTime(identity.start, processStartTime(identity.pid))) return false;
  const state = readProcStat(identity.pid)?.state;
  // Read after the start time: had the process been reaped in between, no entry (or a stranger's,
  // whose start time differs, checked once more) would be found.
  return state !== undefined && state !== 'Z' && state !== 'X' && sameStartTime(identity.start, processStartTime(identity.pid));
}
