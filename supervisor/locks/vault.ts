/**
 * The lock vault: where the supervisor keeps copies of its locked lock-file descriptors so that
 * the locks outlive it while its runtime lives (issue 12, item 3).
 *
 * An OFD lock belongs to the open file description; the kernel drops it when the last descriptor
 * naming the description is closed, and a descriptor sent over a unix socket and not yet received
 * ("in flight") names it too, for as long as the receiving socket exists. So:
 *
 * - The vault is two SOCK_SEQPACKET socket pairs, A and B, made by the first supervisor. Each
 *   lease's lock-file descriptors are sent into one of them (never received while the lease is
 *   held), so they stay in flight there.
 * - The four vault sockets themselves are sent, once, into the runtime's *carrier*: a socket pair
 *   the runtime's child_process made as the supervisor's stdin. The runtime holds its end for its
 *   whole life and never reads it (Node never reads a child's stdin; the runtime detaches it so
 *   Node does not destroy it when the child exits either). In flight there, the vault sockets, and
 *   so every descriptor queued in them, live exactly as long as the runtime does.
 * - A fresh supervisor after a crash gets the runtime's end of the carrier as its stdin, *peeks*
 *   the vault sockets out of it (copies; the message stays queued), and adopts what the vault
 *   holds. The locks were never released: there is no window for another runtime.
 * - One of A and B holds a complete snapshot of the held leases, the other is empty. A change
 *   writes the new snapshot into the empty one first and only then drains the old one: at every
 *   moment every held lease is in flight somewhere. Adoption peeks each message, sends a copy
 *   behind it and only then takes it off the queue, for the same reason.
 * - A lease released has its locks dropped at once (unlockRange on its description, which every
 *   copy shares), so a copy still queued somewhere holds a file open but locks nothing.
 *
 * When the runtime dies, its carrier closes, and with it the vault: the locks go, as they should.
 * When a snapshot does not fit (the sockets' buffers are full) the lease is kept without the vault
 * and `store` says so; a crash then leaves it open, which the runtime reports.
 * See unix(7) (SCM_RIGHTS), recvmsg(2) (MSG_PEEK), fcntl(2) (open file description locks).
 */
import { native } from '../native.js';

/** The supervisor's stdin: the runtime's carrier (or, for the first supervisor, its peer). */
export const CARRIER_FD = 0;
const CARRIER_MAGIC = 'heph-jobs lock vault 1';
/** SCM_MAX_FD: descriptors one message may carry. */
const FDS_PER_MESSAGE = 253;
/** Payload bytes per message we aim below (the native limit is 64 KiB). */
const PAYLOAD_BUDGET = 48 * 1024;

/** What a lease's copies need to be adopted: its files in descriptor order, and the holder's notes. */
export interface VaultLease {
  lease: number;
  /** Lock file names, one per descriptor. */
  files: string[];
  fds: number[];
  /** What the lock table needs to release the lease later (its records); opaque here. */
  meta: unknown;
}

interface Pair {
  /** Sending end. */
  x: number;
  /** Receiving end: its queue is the vault. */
  y: number;
}

interface Part {
  lease: number;
  files: string[];
  meta: unknown;
}

interface Payload {
  tag: string;
  parts: Part[];
}

function encode(payload: Payload): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...payload }));
}

/** A message's payload, or null when it is not one of ours (the vault is ours; this is a guard). */
function decode(data: Buffer, fds: number): Payload | null {
  try {
    const value = JSON.parse(data.toString('utf8')) as { v?: unknown; tag?: unknown; parts?: unknown };
    if (value.v !== 1 || typeof value.tag !== 'string' || !Array.isArray(value.parts)) return null;
    let count = 0;
    for (const part of value.parts as Part[]) {
      if (!Number.isSafeInteger(part?.lease) || !Array.isArray(part.files) || !part.files.every((file) => typeof file === 'string')) return null;
      count += part.files.length;
    }
    return count === fds ? { tag: value.tag, parts: value.parts as Part[] } : null;
  } catch {
    return null;
  }
}

let tagsMade = 0;

/**
 * A tag no other message in any carrier has: only its uniqueness matters (it marks where a
 * snapshot starts), and no two processes share a pid at one instant of the monotonic clock. Not
 * random bytes: node:crypto would be loaded by every hello just for this (bench: start).
 */
function newTag(): string {
  return `${process.pid.toString(36)}.${process.hrtime.bigint().toString(36)}.${(tagsMade++).toString(36)}`;
}

function closeAll(fds: readonly number[]): void {
  for (const fd of fds) native.closeFd(fd);
}

/** Messages of at most FDS_PER_MESSAGE descriptors and about PAYLOAD_BUDGET bytes; a lease may span several. */
function pack(leases: Iterable<VaultLease>, tag: string): { payload: Buffer; fds: number[] }[] {
  const messages: { payload: Buffer; fds: number[] }[] = [];
  let parts: Part[] = [];
  let fds: number[] = [];
  let bytes = 0;
  const flush = (): void => {
    if (fds.length > 0) messages.push({ payload: encode({ tag, parts }), fds });
    parts = [];
    fds = [];
    bytes = 0;
  };
  for (const lease of leases) {
    for (let i = 0; i < lease.fds.length; ) {
      const room = FDS_PER_MESSAGE - fds.length;
      const take = Math.min(room, lease.fds.length - i);
      const part: Part = { lease: lease.lease, files: lease.files.slice(i, i + take), meta: lease.meta };
      const size = JSON.stringify(part).length;
      if (fds.length > 0 && bytes + size > PAYLOAD_BUDGET) {
        flush();
        continue;
      }
      parts.push(part);
      fds.push(...lease.fds.slice(i, i + take));
      bytes += size;
      i += take;
      if (fds.length === FDS_PER_MESSAGE) flush();
    }
  }
  flush();
  return messages;
}

export class LockVault {
  /** Which of the two pairs holds the complete snapshot. */
  private current = 0;

  private constructor(private readonly pairs: [Pair, Pair]) {}

  /**
   * The first supervisor of a runtime: makes the vault and sends its sockets into the carrier
   * (`carrier` is our end of it; the runtime holds the other and never reads it).
   */
  static create(carrier: number = CARRIER_FD): LockVault {
    const made: number[] = [];
    try {
      for (let i = 0; i < 2; i++) made.push(...native.seqpacketPair());
      if (!native.sendFds(carrier, Buffer.from(CARRIER_MAGIC), made)) throw new Error('the carrier socket is full');
    } catch (error) {
      closeAll(made);
      throw new Error(`heph-jobs supervisor: cannot set up the lock vault: ${(error as Error).message}`, { cause: error });
    }
    const [ax, ay, bx, by] = made as [number, number, number, number];
    return new LockVault([
      { x: ax, y: ay },
      { x: bx, y: by },
    ]);
  }

  /**
   * A later supervisor of the same runtime: `carrier` is the runtime's end; the vault sockets are
   * peeked out of it (they stay there for the next one). Null when the carrier holds no vault.
   */
  static inherit(carrier: number = CARRIER_FD): LockVault | null {
    const message = native.receiveFds(carrier, true);
    if (message === null) return null;
    if (message.payload.toString('latin1') !== CARRIER_MAGIC || message.fds.length !== 4) {
      closeAll(message.fds);
      return null;
    }
    const [ax, ay, bx, by] = message.fds as [number, number, number, number];
    return new LockVault([
      { x: ax, y: ay },
      { x: bx, y: by },
    ]);
  }

  /**
   * Takes over every lease the vault holds (a dead supervisor's): each message is peeked (copies
   * of its descriptors), a copy of what is new in it is queued behind it, and only then is it
   * taken off, so nothing is ever out of flight. Then one snapshot of everything is queued behind
   * those copies in A, B is drained, and the copies before the snapshot are taken off. If the
   * snapshot does not fit, the vault is emptied and the leases are held by this process alone.
   */
  adopt(): VaultLease[] {
    const found = new Map<number, VaultLease & { tag: string }>();
    const rotation = newTag();
    for (const pair of this.pairs) {
      for (;;) {
        const head = native.receiveFds(pair.y, true);
        if (head === null) break;
        const payload = decode(head.payload, head.fds.length);
        if (payload?.tag === rotation) {
          closeAll(head.fds);
          break;
        }
        if (payload === null) closeAll(head.fds);
        const kept: VaultLease[] = [];
        let at = 0;
        for (const part of payload?.parts ?? []) {
          const fds = head.fds.slice(at, at + part.files.length);
          at += part.files.length;
          const known = found.get(part.lease);
          // The same lease in two snapshots (a change cut short by a crash): one is enough.
          if (known && known.tag !== payload!.tag) {
            closeAll(fds);
            continue;
          }
          if (known) {
            known.files.push(...part.files);
            known.fds.push(...fds);
          } else {
            found.set(part.lease, { lease: part.lease, files: [...part.files], fds: [...fds], meta: part.meta, tag: payload!.tag });
          }
          kept.push({ lease: part.lease, files: part.files, fds, meta: part.meta });
        }
        // No room for the copy: the message is taken off all the same (we hold its descriptors now).
        this.sendAll(pair, pack(kept, rotation));
        const taken = native.receiveFds(pair.y, false);
        if (taken) closeAll(taken.fds);
      }
    }
    const leases = [...found.values()].map(({ lease, files, fds, meta }) => ({ lease, files, fds, meta }));
    const snapshot = newTag();
    const stored = this.sendAll(this.pairs[0], pack(leases, snapshot));
    this.drain(this.pairs[1]);
    if (stored) this.dropBefore(this.pairs[0], snapshot);
    else this.drain(this.pairs[0]);
    this.current = 0;
    return leases;
  }

  /**
   * Makes the vault hold exactly `leases` (descriptors we keep open too): the new snapshot goes
   * into the empty pair, then the old one is drained. False when it did not fit; the old snapshot
   * then still stands, and what is not in it is held by this process alone.
   */
  store(leases: Iterable<VaultLease>): boolean {
    const target = this.pairs[1 - this.current]!;
    if (!this.sendAll(target, pack(leases, newTag()))) {
      this.drain(target);
      return false;
    }
    this.drain(this.pairs[this.current]!);
    this.current = 1 - this.current;
    return true;
  }

  /** Our copies of the vault sockets (the carrier keeps the vault itself). */
  close(): void {
    for (const pair of this.pairs) closeAll([pair.x, pair.y]);
  }

  /** Queues every message; false at the first that does not fit (the ones before it stay queued). */
  private sendAll(pair: Pair, messages: { payload: Buffer; fds: number[] }[]): boolean {
    return messages.every((message) => native.sendFds(pair.x, message.payload, message.fds));
  }

  /** Takes every message off the pair's queue, closing what it carried. */
  private drain(pair: Pair): void {
    for (;;) {
      const message = native.receiveFds(pair.y, false);
      if (message === null) return;
      closeAll(message.fds);
    }
  }

  /** Takes messages off the head until the first of snapshot `tag`. */
  private dropBefore(pair: Pair, tag: string): void {
    for (;;) {
      const head = native.receiveFds(pair.y, true);
      if (head === null) return;
      closeAll(head.fds);
      if (decode(head.payload, head.fds.length)?.tag === tag) return;
      const taken = native.receiveFds(pair.y, false);
      if (taken) closeAll(taken.fds);
    }
  }
}
