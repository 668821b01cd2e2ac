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
 * The vault's room is its sockets' send buffers (every queued message takes its payload and the
 * kernel's overhead from it): when a snapshot does not fit, `store` says so and the old snapshot
 * stands, so the lease that did not fit is refused at grant time (kernel-locks.ts).
 * See unix(7) (SCM_RIGHTS), recvmsg(2) (MSG_PEEK), fcntl(2) (open file description locks).
 */
import fs from 'node:fs';
import path from 'node:path';
import { native } from '../native.js';

/** The supervisor's stdin: the runtime's carrier (or, for the first supervisor, its peer). */
export const CARRIER_FD = 0;
const CARRIER_MAGIC = 'heph-jobs lock vault 1';
/** SCM_MAX_FD: descriptors one message may carry. */
const FDS_PER_MESSAGE = 253;
/** Payload bytes per message we aim below (the native limit is 64 KiB). */
const PAYLOAD_BUDGET = 48 * 1024;
/** Header bytes one part may take at most (seven numbers of up to 16 digits, brackets, commas). */
const PART_HEADER_BYTES = 128;
/** Header bytes a message takes besides its parts and tags (length prefix, version, keys). */
const MESSAGE_HEADER_BYTES = 64;

/** What a lease's copies need to be adopted: its files in descriptor order, and the holder's notes. */
export interface VaultLease {
  lease: number;
  /** Lock file names, one per descriptor (read back from the descriptors at adoption). */
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

/**
 * A slice of one lease in one message: descriptors [fdAt, fdAt + fds.length) of its fdTotal and
 * bytes [byteAt, byteAt + meta.length) of its notes' JSON. Slices say where they go, so a lease
 * is put together whatever order its slices are queued in (an adoption cut short leaves some
 * copied behind the rest), and its notes are carried once, never repeated per message.
 */
interface Piece {
  lease: number;
  fdAt: number;
  fdTotal: number;
  fds: number[];
  byteAt: number;
  byteTotal: number;
  meta: Buffer;
}

interface Message {
  payload: Buffer;
  fds: number[];
}

/**
 * Payload: a 4-byte length, a JSON header `{v, tag, rot?, parts: [[lease, fdAt, fds, fdTotal,
 * byteAt, bytes, byteTotal]...]}`, then the parts' note bytes back to back (raw: what a message
 * takes is known exactly). `tag` names the snapshot; `rot`, the adoption that copied it.
 */
function encode(tag: string, rot: string | null, pieces: readonly Piece[]): Buffer {
  const parts = pieces.map((p) => [p.lease, p.fdAt, p.fds.length, p.fdTotal, p.byteAt, p.meta.length, p.byteTotal]);
  const header = Buffer.from(JSON.stringify({ v: 2, tag, ...(rot === null ? {} : { rot }), parts }));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(header.length);
  return Buffer.concat([length, header, ...pieces.map((piece) => piece.meta)]);
}

interface Decoded {
  tag: string;
  rot: string | null;
  pieces: Piece[];
}

/** A message's tags and pieces, or null when it is not one of ours (the vault is ours; this is a guard). */
function decode(data: Buffer, fds: readonly number[]): Decoded | null {
  try {
    if (data.length < 4) return null;
    const length = data.readUInt32BE(0);
    if (4 + length > data.length) return null;
    const value = JSON.parse(data.subarray(4, 4 + length).toString('utf8')) as { v?: unknown; tag?: unknown; rot?: unknown; parts?: unknown };
    if (value.v !== 2 || typeof value.tag !== 'string' || !Array.isArray(value.parts)) return null;
    if (value.rot !== undefined && typeof value.rot !== 'string') return null;
    const pieces: Piece[] = [];
    let fdOffset = 0;
    let byteOffset = 4 + length;
    for (const part of value.parts as unknown[]) {
      if (!Array.isArray(part) || part.length !== 7 || !part.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) return null;
      const [lease, fdAt, count, fdTotal, byteAt, bytes, byteTotal] = part as number[] as [number, number, number, number, number, number, number];
      if (fdAt + count > fdTotal || byteAt + bytes > byteTotal || fdOffset + count > fds.length || byteOffset + bytes > data.length) return null;
      pieces.push({ lease, fdAt, fdTotal, fds: fds.slice(fdOffset, fdOffset + count), byteAt, byteTotal, meta: data.subarray(byteOffset, byteOffset + bytes) });
      fdOffset += count;
      byteOffset += bytes;
    }
    if (fdOffset !== fds.length || byteOffset !== data.length) return null;
    return { tag: value.tag, rot: (value.rot as string | undefined) ?? null, pieces };
  } catch {
    return null;
  }
}

let tagsMade = 0;

/**
 * A tag no other message in any carrier has: only its uniqueness matters (it marks a snapshot, or
 * an adoption's copies), and no two processes share a pid at one instant of the monotonic clock.
 * Not random bytes: node:crypto would be loaded by every hello just for this (bench: start).
 */
function newTag(): string {
  return `${process.pid.toString(36)}.${process.hrtime.bigint().toString(36)}.${(tagsMade++).toString(36)}`;
}

function closeAll(fds: readonly number[]): void {
  for (const fd of fds) native.closeFd(fd);
}

/** The name of the file `fd` is open on, from the kernel (a process may always read its own /proc/self/fd). */
function fileNameOf(fd: number): string {
  try {
    return path.basename(fs.readlinkSync(`/proc/self/fd/${fd}`)).replace(/ \(deleted\)$/, '');
  } catch {
    return '';
  }
}

/** Each lease as one piece: all its descriptors and its notes as JSON. */
function piecesOf(leases: Iterable<VaultLease>): Piece[] {
  return [...leases].map(({ lease, fds, meta }) => {
    const bytes = Buffer.from(JSON.stringify(meta ?? null));
    return { lease, fdAt: 0, fdTotal: fds.length, fds, byteAt: 0, byteTotal: bytes.length, meta: bytes };
  });
}

/**
 * Messages of at most FDS_PER_MESSAGE descriptors and about PAYLOAD_BUDGET bytes; a piece is cut
 * over as many as it needs (a message may carry notes and no descriptor).
 */
function pack(pieces: Iterable<Piece>, tag: string, rot: string | null = null): Message[] {
  const messages: Message[] = [];
  const empty = MESSAGE_HEADER_BYTES + tag.length + (rot?.length ?? 0);
  let parts: Piece[] = [];
  let count = 0;
  let bytes = empty;
  const flush = (): void => {
    if (parts.length > 0) messages.push({ payload: encode(tag, rot, parts), fds: parts.flatMap((part) => part.fds) });
    parts = [];
    count = 0;
    bytes = empty;
  };
  for (const piece of pieces) {
    let fdsDone = 0;
    let bytesDone = 0;
    do {
      const fdRoom = FDS_PER_MESSAGE - count;
      const byteRoom = PAYLOAD_BUDGET - bytes - PART_HEADER_BYTES;
      const fdsLeft = piece.fds.length - fdsDone;
      const bytesLeft = piece.meta.length - bytesDone;
      // Full for what this piece still needs: the next message takes it on.
      if (parts.length > 0 && ((fdsLeft > 0 && fdRoom === 0) || (bytesLeft > 0 && byteRoom <= 0))) {
        flush();
        continue;
      }
      const fds = piece.fds.slice(fdsDone, fdsDone + Math.min(fdRoom, fdsLeft));
      const meta = piece.meta.subarray(bytesDone, bytesDone + Math.max(0, Math.min(byteRoom, bytesLeft)));
      parts.push({ ...piece, fdAt: piece.fdAt + fdsDone, fds, byteAt: piece.byteAt + bytesDone, meta });
      count += fds.length;
      bytes += PART_HEADER_BYTES + meta.length;
      fdsDone += fds.length;
      bytesDone += meta.length;
    } while (fdsDone < piece.fds.length || bytesDone < piece.meta.length);
  }
  flush();
  return messages;
}

/** One lease of one snapshot as read back from a pair, slice by slice. */
class Assembly {
  readonly fds: (number | undefined)[];
  readonly meta: Buffer;
  private fdsMissing: number;
  private bytesMissing: number;
  private readonly bytesSeen: boolean[];

  constructor(
    readonly lease: number,
    fdTotal: number,
    byteTotal: number,
  ) {
    this.fds = new Array<number | undefined>(fdTotal).fill(undefined);
    this.meta = Buffer.alloc(byteTotal);
    this.bytesSeen = new Array<boolean>(byteTotal).fill(false);
    this.fdsMissing = fdTotal;
    this.bytesMissing = byteTotal;
  }

  get whole(): boolean {
    return this.fdsMissing === 0 && this.bytesMissing === 0;
  }

  /** Puts a slice in place; descriptors it repeats (or that do not fit this lease) are closed. */
  add(piece: Piece): void {
    if (piece.fdTotal !== this.fds.length || piece.byteTotal !== this.meta.length) {
      closeAll(piece.fds);
      return;
    }
    piece.fds.forEach((fd, i) => {
      if (this.fds[piece.fdAt + i] !== undefined) native.closeFd(fd);
      else {
        this.fds[piece.fdAt + i] = fd;
        this.fdsMissing--;
      }
    });
    for (let i = 0; i < piece.meta.length; i++) {
      if (this.bytesSeen[piece.byteAt + i]) continue;
      this.bytesSeen[piece.byteAt + i] = true;
      this.meta[piece.byteAt + i] = piece.meta[i]!;
      this.bytesMissing--;
    }
  }

  close(): void {
    closeAll(this.fds.filter((fd): fd is number => fd !== undefined));
  }
}

/**
 * Takes the head message off the pair's queue and closes what it carried; false when none was
 * queued. Near RLIMIT_NOFILE its descriptors may not all fit in our table (MSG_CTRUNC): the
 * message is off the queue all the same and the kernel has closed the rest, which is all we want.
 */
function takeOff(pair: Pair): boolean {
  try {
    const message = native.receiveFds(pair.y, false);
    if (message === null) return false;
    closeAll(message.fds);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EMSGSIZE') return true;
    throw error;
  }
}

/** Tests only: an adoption that dies (as its process would) after this many messages were copied behind. */
export interface CrashAt {
  afterCopies: number;
}

/** A lease's notes parsed back, or null when they do not parse. */
function parseMeta(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
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
   * Takes over every lease the vault holds (a dead supervisor's). Each pair is read in turn: every
   * message is peeked (copies of its descriptors), a copy is queued behind it, and only then is it
   * taken off, so nothing is ever out of flight and each pair holds what it held. One of the two
   * holds every lease whole (a store writes its snapshot whole before it drains the old one): the
   * other is drained, the new snapshot written there, then the first drained. So an adoption
   * needs no more room than the store before it did. A lease found only in part is not adopted.
   */
  adopt(crash?: CrashAt): VaultLease[] {
    const rotation = newTag();
    const seen = this.pairs.map((pair) => this.readRotating(pair, rotation, crash));
    const chosen = new Map<number, Assembly>();
    for (const found of seen) {
      for (const assembly of found.values()) if (assembly.whole && !chosen.has(assembly.lease)) chosen.set(assembly.lease, assembly);
    }
    for (const found of seen) for (const assembly of found.values()) if (chosen.get(assembly.lease) !== assembly) assembly.close();
    const leases: VaultLease[] = [...chosen.values()].map((assembly) => {
      const fds = assembly.fds as number[];
      return { lease: assembly.lease, files: fds.map(fileNameOf), fds, meta: parseMeta(assembly.meta) };
    });
    const holdsAll = (found: Map<string, Assembly>): boolean => {
      const whole = new Set([...found.values()].filter((assembly) => assembly.whole).map((assembly) => assembly.lease));
      return [...chosen.keys()].every((lease) => whole.has(lease));
    };
    const keep = holdsAll(seen[0]!) ? 0 : holdsAll(seen[1]!) ? 1 : null;
    const target = keep === null ? 1 : 1 - keep;
    this.drain(this.pairs[target]!);
    if (this.sendAll(this.pairs[target]!, pack(piecesOf(leases), newTag()))) {
      this.drain(this.pairs[1 - target]!);
      this.current = target;
    } else {
      // Neither pair held everything and the union does not fit: what stays queued in the other is kept.
      this.drain(this.pairs[target]!);
      this.current = 1 - target;
    }
    return leases;
  }

  /**
   * Makes the vault hold exactly `leases` (descriptors we keep open too): the new snapshot goes
   * into the empty pair, then the old one is drained. False when it did not fit; the old snapshot
   * then still stands, and what is not in it is held by this process alone.
   */
  store(leases: Iterable<VaultLease>): boolean {
    const target = this.pairs[1 - this.current]!;
    if (!this.sendAll(target, pack(piecesOf(leases), newTag()))) {
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

  /**
   * Every lease of every snapshot in the pair's queue, by snapshot tag and lease, leaving the
   * queue as it was: each message is copied behind itself (marked with this adoption's `rotation`)
   * before it is taken off, until the first copy comes round.
   */
  private readRotating(pair: Pair, rotation: string, crash?: CrashAt): Map<string, Assembly> {
    const found = new Map<string, Assembly>();
    for (let copied = 0; ; copied++) {
      if (crash !== undefined && copied === crash.afterCopies) {
        for (const assembly of found.values()) assembly.close();
        throw new Error(`adoption cut short after ${copied} copies (a test's crash)`);
      }
      const head = native.receiveFds(pair.y, true);
      if (head === null) break;
      const message = decode(head.payload, head.fds);
      if (message?.rot === rotation) {
        closeAll(head.fds);
        break;
      }
      if (message === null) closeAll(head.fds);
      // No room for the copy: the message is taken off all the same (we hold its descriptors now).
      // The copy goes first: the assembly below may close descriptors the message repeats.
      if (message !== null) this.sendAll(pair, pack(message.pieces, message.tag, rotation));
      for (const piece of message?.pieces ?? []) {
        const key = `${message!.tag}/${piece.lease}`;
        let assembly = found.get(key);
        if (!assembly) found.set(key, (assembly = new Assembly(piece.lease, piece.fdTotal, piece.byteTotal)));
        assembly.add(piece);
      }
      takeOff(pair);
    }
    return found;
  }

  /** Queues every message; false at the first that does not fit (the ones before it stay queued). */
  private sendAll(pair: Pair, messages: Message[]): boolean {
    return messages.every((message) => native.sendFds(pair.x, message.payload, message.fds));
  }

  /** Takes every message off the pair's queue, closing what it carried. */
  private drain(pair: Pair): void {
    while (takeOff(pair));
  }
}
