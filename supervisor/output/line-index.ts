/**
 * Per-line metadata of an output ring (SPEC 5): where each retained line's bytes start, how long
 * they are, how many bytes were cut from it, and its stream. Typed arrays used as a circular
 * index: entry k (0 = oldest) is at slot (first + k) % capacity, and its seq is
 * `total - count + k`. The arrays start small and double up to `maxLines`, so a quiet job costs
 * little; 21 bytes a line at most.
 */
import { inspect } from 'node:util';
import type { StreamName } from '../../src/protocol/output.js';

/** Index arrays start this small and double up to `maxLines`. */
const MIN_CAPACITY = 64;

/** The stream names by the code the index stores (0 stdout, 1 stderr). */
export const STREAMS: readonly StreamName[] = ['stdout', 'stderr'];

/** The code the index stores for `stream`; a TypeError for anything else. */
export function streamCode(stream: StreamName): 0 | 1 {
  if (stream === 'stdout') return 0;
  if (stream === 'stderr') return 1;
  // inspect, not describeValue: callers (and tests) expect the name in single quotes, as JS prints it.
  throw new TypeError(`stream must be 'stdout' or 'stderr'; received ${inspect(stream, { depth: 1, breakLength: Infinity })}`);
}

export class LineIndex {
  /** Lines ever added: the next line's seq. */
  total = 0;
  /** Lines held (at most `maxLines`). */
  count = 0;
  private cap = 0;
  private first = 0;
  /** Where each line's bytes start (the owner decides in what: an arena position, a chunk offset). */
  private offs = new Float64Array(0);
  private lens = new Uint32Array(0);
  private cuts = new Float64Array(0);
  private streams = new Uint8Array(0);

  constructor(private readonly maxLines: number) {}

  /** The oldest held line's seq (`total` when none is held). */
  get firstSeq(): number {
    return this.total - this.count;
  }

  /** The slot of held line `seq`. */
  slot(seq: number): number {
    const i = this.first + (seq - (this.total - this.count));
    return i >= this.cap ? i - this.cap : i;
  }

  /** The slot after `slot`, in seq order. */
  next(slot: number): number {
    return slot + 1 === this.cap ? 0 : slot + 1;
  }

  offset(slot: number): number {
    return this.offs[slot]!;
  }

  length(slot: number): number {
    return this.lens[slot]!;
  }

  cut(slot: number): number {
    return this.cuts[slot]!;
  }

  stream(slot: number): number {
    return this.streams[slot]!;
  }

  /** Adds `by` to the offsets of `count` lines from `slot` on. */
  shift(slot: number, count: number, by: number): void {
    const offs = this.offs;
    for (let k = 0, i = slot; k < count; k++) {
      offs[i] = offs[i]! + by;
      if (++i === this.cap) i = 0;
    }
  }

  /** Makes room for one more line, growing if it may. False: it holds `maxLines`; drop one first. */
  hasRoom(): boolean {
    if (this.count < this.cap) return true;
    if (this.cap === this.maxLines) return false;
    this.grow();
    return true;
  }

  /** Appends the newest line (after `hasRoom` said yes). */
  add(offset: number, length: number, cut: number, stream: number): void {
    let i = this.first + this.count;
    if (i >= this.cap) i -= this.cap;
    this.offs[i] = offset;
    this.lens[i] = length;
    this.cuts[i] = cut;
    this.streams[i] = stream;
    this.count++;
    this.total++;
  }

  /** Drops the oldest line; returns its length. */
  dropOldest(): number {
    const i = this.first;
    this.first = i + 1 === this.cap ? 0 : i + 1;
    this.count--;
    return this.lens[i]!;
  }

  private grow(): void {
    const cap = Math.min(this.maxLines, Math.max(MIN_CAPACITY, this.cap * 2));
    const offs = new Float64Array(cap);
    const lens = new Uint32Array(cap);
    const cuts = new Float64Array(cap);
    const streams = new Uint8Array(cap);
    for (let k = 0, i = this.first; k < this.count; k++) {
      offs[k] = this.offs[i]!;
      lens[k] = this.lens[i]!;
      cuts[k] = this.cuts[i]!;
      streams[k] = this.streams[i]!;
      if (++i === this.cap) i = 0;
    }
    this.offs = offs;
    this.lens = lens;
    this.cuts = cuts;
    this.streams = streams;
    this.first = 0;
    this.cap = cap;
  }
}
