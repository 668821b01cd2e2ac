/**
 * Holder records: who holds a resource, written into the resource's own lock file, one JSON line
 * per holder (one for an exclusive holder, one per sharer). A later taker reads them to find a
 * holder that died holding (its runtime with it), whose jobs may still run; the record names the
 * holder by its supervisor instance (pid, start time, boot: src/protocol/identity.ts), never by a
 * pid alone (issue 12, item 2).
 *
 * - Records are cleared on release: an exclusive holder truncates the file, a sharer removes its
 *   own line (found by the lease's random token), so a later taker only ever sees the records of
 *   holders that did not release, that is, that died holding.
 * - Sharers edit the file together, so each edit (and each sharer's read) happens under an OFD
 *   write lock on RECORD_MUTEX, a byte no resource lock uses. An exclusive holder has the file to
 *   itself (nobody else holds byte 0) and needs none.
 * - What is read is untrusted input: at most MAX_RECORD_BYTES are read, a line longer than
 *   MAX_LINE_BYTES is skipped, and a line becomes a record only when every field is well formed
 *   (parseIdentity for the holder) and it is about this very resource. Anything else is ignored,
 *   never acted on.
 */
import fs from 'node:fs';
import { parseIdentity, type SupervisorIdentity } from '../../src/protocol/identity.js';
import { LOCK_MODES, type LockResource } from '../../src/protocol/messages.js';
import { native } from '../native.js';

/** The byte whose write lock serialises sharers' edits (beyond every range the resource locks use). */
export const RECORD_MUTEX = 2 ** 49;
/** Bytes of a lock file that are ever read. */
export const MAX_RECORD_BYTES = 256 * 1024;
/** A line longer than this is not one of ours. */
export const MAX_LINE_BYTES = 2048;
/** Longest owner label kept in a record (a host's label is free text). */
const MAX_OWNER_CHARS = 200;
/** Attempts at the record mutex before an edit is given up: another sharer holds it only for one
 * synchronous read-modify-write, a few microseconds. */
const MUTEX_ATTEMPTS = 20_000;

export type LockMode = LockResource['mode'];

export interface HolderRecord {
  resource: string;
  mode: LockMode;
  /** The supervisor instance holding the lease. */
  holder: SupervisorIdentity;
  /** Random per lease: which line is whose. */
  token: string;
  owner: string;
  job: number | null;
  since: number;
  /**
   * Dead instances whose leases this holder adopted (through the lock vault): their jobs'
   * leftovers may still be running, so a later taker stops what they left too, not only what the
   * holder left. Absent or empty for a lease taken afresh.
   */
  predecessors?: SupervisorIdentity[];
}

/** At most this many predecessors are kept or read (a chain of crashes of one runtime). */
const MAX_PREDECESSORS = 8;

/** The predecessors field as untrusted input: an array of valid identities, or nothing; null when malformed. */
function parsePredecessors(value: unknown): SupervisorIdentity[] | null {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_PREDECESSORS) return null;
  const parsed = value.map((entry) => parseIdentity(entry));
  return parsed.every((entry): entry is SupervisorIdentity => entry !== null) ? parsed : null;
}

const TOKEN = /^[0-9a-f]{16}$/;

/** The record in `line` when it is well formed and about `resource`, else null. */
export function parseRecord(line: string, resource: string): HolderRecord | null {
  if (line.length === 0 || Buffer.byteLength(line) > MAX_LINE_BYTES) return null;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const fields = value as Record<string, unknown>;
  const holder = parseIdentity(fields);
  if (holder === null || fields.v !== 2 || fields.resource !== resource) return null;
  if (!LOCK_MODES.includes(fields.mode as LockMode) || typeof fields.token !== 'string' || !TOKEN.test(fields.token)) return null;
  if (typeof fields.owner !== 'string' || fields.owner.length > MAX_OWNER_CHARS) return null;
  if (fields.job !== null && !(Number.isSafeInteger(fields.job) && (fields.job as number) >= 0)) return null;
  if (!Number.isSafeInteger(fields.since)) return null;
  const predecessors = parsePredecessors(fields.predecessors);
  if (predecessors === null) return null;
  return {
    resource,
    mode: fields.mode as LockMode,
    holder,
    token: fields.token,
    owner: fields.owner,
    job: fields.job as number | null,
    since: fields.since as number,
    ...(predecessors.length > 0 ? { predecessors } : {}),
  };
}

/** The line a record is written as; the holder's fields at the top level, as parseIdentity reads them. */
export function formatRecord(record: HolderRecord): string {
  const { holder, predecessors, ...rest } = record;
  const kept = (predecessors ?? []).slice(-MAX_PREDECESSORS);
  return `${JSON.stringify({ v: 2, ...holder, ...rest, owner: rest.owner.slice(0, MAX_OWNER_CHARS), ...(kept.length > 0 ? { predecessors: kept } : {}) })}\n`;
}

/** The file's text, at most MAX_RECORD_BYTES of it. */
function readText(fd: number): string {
  const size = Math.min(fs.fstatSync(fd).size, MAX_RECORD_BYTES);
  const buffer = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const n = fs.readSync(fd, buffer, got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return buffer.subarray(0, got).toString('utf8');
}

/** Replaces the file's contents with `text`. */
function writeText(fd: number, text: string): void {
  const data = Buffer.from(text);
  fs.ftruncateSync(fd, 0);
  let put = 0;
  while (put < data.length) put += fs.writeSync(fd, data, put, data.length - put, put);
}

/** The records in the file; a torn or foreign line is no record (and an edit drops it). */
function recordsIn(fd: number, resource: string): HolderRecord[] {
  return readText(fd)
    .split('\n')
    .map((line) => parseRecord(line, resource))
    .filter((record): record is HolderRecord => record !== null);
}

/** Replaces the file's contents with `records`. */
function writeRecords(fd: number, records: HolderRecord[]): void {
  writeText(fd, records.map(formatRecord).join(''));
}

/**
 * Runs `edit` under the record mutex of `fd`'s file; false (and `edit` not run) when the mutex
 * could not be had. Only the mutex byte is unlocked afterwards; the lease's own locks stay.
 */
function underMutex(fd: number, edit: () => void): boolean {
  for (let attempt = 0; attempt < MUTEX_ATTEMPTS; attempt++) {
    if (!native.lockRange(fd, true, RECORD_MUTEX, 1)) continue;
    try {
      edit();
    } finally {
      native.unlockRange(fd, RECORD_MUTEX, 1);
    }
    return true;
  }
  return false;
}

/** The records of `resource` in its lock file `fd` (held by us in `mode`): what previous holders left. */
export function readRecords(fd: number, resource: string, mode: LockMode): HolderRecord[] {
  let records: HolderRecord[] = [];
  const read = () => {
    records = recordsIn(fd, resource);
  };
  if (mode === 'exclusive') read();
  else if (!underMutex(fd, read)) return [];
  return records;
}

/**
 * Writes `record` as the file's holder: an exclusive holder's record replaces everything; a sharer
 * adds its line and drops the lines of holders `gone` names (dead instances already cleaned up).
 * False when a sharer could not have the mutex (the record is then missing, not wrong).
 */
export function writeRecord(fd: number, record: HolderRecord, gone: (record: HolderRecord) => boolean = () => false): boolean {
  if (record.mode === 'exclusive') {
    writeRecords(fd, [record]);
    return true;
  }
  return underMutex(fd, () => {
    const kept = recordsIn(fd, record.resource).filter((other) => other.token !== record.token && !gone(other));
    writeRecords(fd, [...kept, record]);
  });
}

/** Clears a releasing holder's record: the whole file for an exclusive one, its own line for a sharer. */
export function clearRecord(fd: number, resource: string, mode: LockMode, token: string): boolean {
  if (mode === 'exclusive') {
    fs.ftruncateSync(fd, 0);
    return true;
  }
  return underMutex(fd, () => writeRecords(fd, recordsIn(fd, resource).filter((record) => record.token !== token)));
}
