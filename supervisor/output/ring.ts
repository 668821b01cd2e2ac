/**
 * The per-job output ring that lives in the supervisor (SPEC 5).
 *
 * Ingest (`push`) is the hot path: the supervisor must read as fast as the job writes, and during a
 * flood it must not allocate at the ingest rate (external memory is only given back when V8's GC
 * gets round to it). So the ring's storage is allocated once and then reused:
 *
 *  - the line bytes live in one circular byte arena per ring. Lines are stored in seq order, each
 *    at a "virtual" position (a byte counter; the arena offset is that modulo the arena size).
 *    A line that runs past the end of the arena continues at its start (two pieces); the rare
 *    read of such a line joins the pieces into a temporary buffer. The arena starts at 64 KiB and
 *    doubles as the retained bytes need it, up to its bound, so a quiet job stays small;
 *  - line metadata (position, length, cut bytes, stream) lives in typed arrays used as a circular
 *    index (entry k, 0 = oldest, has seq total - count + k), which doubles up to `maxLines`;
 *  - a line in progress goes to a `maxLineBytes` buffer per stream (`PendingLine`), and is copied
 *    from there into the arena when its newline arrives;
 *  - the head lines (the first `headLines`) are small copies of their own, made once per job.
 *
 * `push` splits on `\n` with `Buffer.indexOf` and first records each completed line as a range of
 * the chunk, evicting the oldest lines as the line and byte bounds require; only when the chunk is
 * done are the survivors copied into the arena. Lines that a big chunk pushes out again are never
 * copied, and neighbouring lines go in one copy (a run) together with the `\n` or `\r\n` between
 * them, so a flood of short lines costs one memcpy per chunk rather than one per line. Those
 * separators (at most RUN_MAX_GAP bytes after each line but the newest) are why the arena's bound
 * is `maxBytes + RUN_MAX_GAP * maxLines`, not `maxBytes`: it always holds every line the two
 * bounds let the ring keep, so eviction follows the bounds alone (`retainedBytes` counts line
 * bytes only, as before). No reference to the chunk outlives `push`. All text work (the bare-`\r`
 * rule, ANSI removal, UTF-8 escaping) happens in `render.ts` when a line is read.
 *
 * Memory per ring: the arena (at most `maxBytes + 2 * maxLines`, and at most 64 KiB or twice the
 * most its lines have needed), the index (21 bytes a line, at most `maxLines` lines), one
 * `maxLineBytes` buffer per stream that has had a partial line, and the head lines (at most
 * `headLines` x `maxLineBytes`). In steady state ingest allocates nothing.
 */
import type { OutputLine, OutputRead, StreamName } from '../../src/protocol/output.js';
import { constants as bufferConstants } from 'node:buffer';
import { inspect } from 'node:util';
import { cutLongLine, PendingLine, type LineRange } from './line-splitter.js';
import { clipUtf8, renderLine } from './render.js';


export interface OutputLimits {
  /** Completed lines kept. Default: 2000 (SPEC 5). */
  maxLines: number;
  /** Bytes of a line kept; the rest is counted as cut. Default: 8192 (SPEC 5). */
  maxLineBytes: number;
  /** Raw line bytes kept across the ring; not less than `maxLineBytes`. Default: 4 MiB. */
  maxBytes: number;
  /** Lines from the start of the job kept after the ring wraps; 0 turns this off. Default: 20. */
  headLines: number;
}

/** SPEC 5 defaults; the byte bound keeps 2000 long lines from costing 16 MiB per job. */
export const DEFAULT_OUTPUT_LIMITS: Readonly<OutputLimits> = Object.freeze({
  maxLines: 2000,
  maxLineBytes: 8192,
  maxBytes: 4 * 1024 * 1024,
  headLines: 20,
});


export interface ReadOptions {
  /** Return the last N lines, a pending partial line counting as one. Default: 50. Ignored with `since`. */
  tail?: number;
  /** Return the lines with seq > since, oldest first (a cursor read); -1 reads from the start. */
  since?: number;
  /** Bound on the rendered text bytes returned (lines, then head). Default: 65536. */
  maxBytes?: number;
  /** With `since`: at most N lines, partial ones included. Default: no bound besides `maxBytes`. */
  limit?: number;
}


export interface OutputStats {
  /** Completed lines so far. */
  totalLines: number;
  /** Lines that fell off the ring (the head may still hold some of them). */
  droppedLines: number;
  /** Lines cut by `maxLineBytes`, and the bytes cut from them. */
  truncatedLines: number;
  truncatedBytes: number;
  /** Bytes pushed, both streams. */
  bytesIn: number;
  /** Lines in the ring and their raw bytes (bounded by `maxLines` and `maxBytes`). */
  retainedLines: number;
  retainedBytes: number;
  /** Bytes held for lines still in progress (at most `maxLineBytes` per stream). */
  pendingBytes: number;
  /** Bytes held by head lines (a copy; not counted in `retainedBytes`). */
  headBytes: number;
}

const LF = 0x0a;
const CR = 0x0d;
const STREAMS: readonly StreamName[] = ['stdout', 'stderr'];
const EMPTY: Buffer = Buffer.alloc(0);
/** Default read size: 50 lines (SPEC 5) within 64 KiB of text. */
const DEFAULT_TAIL = 50;
const DEFAULT_READ_BYTES = 64 * 1024;
/**
 * Separator bytes between two lines of a chunk (`\n`, `\r\n`) that are copied into the arena along
 * with them, so the two lines take one copy. Each stored line but the newest may carry this many.
 */
const RUN_MAX_GAP = 2;
/** Index arrays start this small and double up to `maxLines`, so quiet jobs cost little. */
const MIN_CAPACITY = 64;
/** The arena starts this small (or at its bound, if smaller) and doubles up to its bound. */
const MIN_ARENA_BYTES = 64 * 1024;
const MAX_LINES_LIMIT = 2 ** 24;
const MAX_LINE_BYTES_LIMIT = 2 ** 30;

/** An ES2024 resizable ArrayBuffer (Node 20 has them; the project's TypeScript lib is ES2023). */
interface ResizableArrayBuffer extends ArrayBuffer {
  readonly resizable: boolean;
  readonly maxByteLength: number;
  resize(byteLength: number): void;
}
const ResizableArrayBuffer = ArrayBuffer as unknown as new (
  byteLength: number,
  options: { maxByteLength: number },
) => ResizableArrayBuffer;

interface HeadLine {
  seq: number;
  stream: number;
  raw: Buffer;
  cut: number;
}

export type { OutputLine, OutputRead, StreamName };

export class OutputRing {
  readonly limits: Readonly<OutputLimits>;
  private readonly maxLines: number;
  private readonly maxLineBytes: number;
  private readonly maxBytes: number;
  private readonly headLines: number;
  /** Bytes the arena may grow to: all that the two bounds let the ring keep (see above). */
  private readonly arenaMax: number;

  // The index: entry k (0 = oldest) is at index (first + k) % cap; its seq is total - count + k.
  private cap = 0;
  private first = 0;
  private count = 0;
  /** Where the line starts: a virtual arena position, or, while `push` runs, an offset in the chunk. */
  private offs = new Float64Array(0);
  private lens = new Uint32Array(0);
  private cuts = new Float64Array(0);
  private streams = new Uint8Array(0);
  /** Raw line bytes retained (what the byte bound limits; separators in the arena not counted). */
  private retained = 0;

  // The arena. Lines with seq < `inSource` are stored in it, from virtual position `arenaHead` (the
  // oldest line's) to `arenaTail` (the end of the newest one's); arena byte = position % size.
  // Lines with seq >= `inSource` are still ranges of the buffer being ingested (the chunk, or a
  // pending line), to be copied in by `copyIn` before `push` or `end` returns.
  private arena: Buffer = EMPTY;
  /** The resizable ArrayBuffer under `arena`; null: none could be had, the arena is copied to grow. */
  private arenaBuffer: ResizableArrayBuffer | null | undefined;
  private arenaHead = 0;
  private arenaTail = 0;
  private inSource = Infinity;

  private readonly head: HeadLine[] = [];
  private headBytes = 0;
  private readonly pending: readonly [PendingLine, PendingLine];
  /** Scratch result of `cutLongLine`. */
  private readonly range: LineRange = { start: 0, len: 0, cut: 0 };

  private total = 0;
  private droppedLines = 0;
  private truncatedLines = 0;
  private truncatedBytes = 0;
  private bytesIn = 0;
  private order = 0;

  constructor(limits: Partial<OutputLimits> = {}) {
    if (typeof limits !== 'object' || limits === null) {
      throw new TypeError(`OutputRing limits must be an object; received ${describe(limits)}`);
    }
    const d = DEFAULT_OUTPUT_LIMITS;
    const maxLines = integerLimit('maxLines', limits.maxLines, d.maxLines, 1, MAX_LINES_LIMIT);
    const maxBytes = integerLimit('maxBytes', limits.maxBytes, d.maxBytes, 1, Number.MAX_SAFE_INTEGER);
    const lineMax = Math.min(MAX_LINE_BYTES_LIMIT, maxBytes);
    const maxLineBytes = integerLimit('maxLineBytes', limits.maxLineBytes, Math.min(d.maxLineBytes, lineMax), 1, lineMax);
    const headLines = integerLimit('headLines', limits.headLines, Math.min(d.headLines, maxLines), 0, maxLines);
    this.limits = Object.freeze({ maxLines, maxLineBytes, maxBytes, headLines });
    this.maxLines = maxLines;
    this.maxLineBytes = maxLineBytes;
    this.maxBytes = maxBytes;
    this.headLines = headLines;
    this.arenaMax = Math.min(maxBytes + RUN_MAX_GAP * maxLines, bufferConstants.MAX_LENGTH);
    this.pending = [new PendingLine(maxLineBytes), new PendingLine(maxLineBytes)];
  }

  /** Completed lines so far; compare with an earlier value to notice new lines cheaply. */
  get lineCount(): number {
    return this.total;
  }

  /** Takes in bytes read from one stream. Keeps no reference to `chunk` once it returns. */
  push(stream: StreamName, chunk: Buffer): void {
    const code = streamCode(stream);
    const n = chunk.length;
    if (n === 0) return;
    this.bytesIn += n;
    const p = this.pending[code];
    let pos = 0;
    let nl = chunk.indexOf(LF);
    if (p.open) {
      if (nl < 0) {
        p.append(chunk, 0, n);
        return;
      }
      p.append(chunk, 0, nl > 0 && chunk[nl - 1] === CR ? nl - 1 : nl);
      this.completePending(p, code);
      pos = nl + 1;
      nl = pos < n ? chunk.indexOf(LF, pos) : -1;
    }
    if (nl >= 0) {
      this.inSource = this.total;
      const maxLineBytes = this.maxLineBytes;
      do {
        const end = nl > pos && chunk[nl - 1] === CR ? nl - 1 : nl;
        if (end - pos <= maxLineBytes) this.addLine(code, chunk, pos, end - pos, 0);
        else {
          const r = this.range;
          cutLongLine(chunk, pos, end, maxLineBytes, r);
          this.addLine(code, chunk, r.start, r.len, r.cut);
        }
        pos = nl + 1;
        nl = pos < n ? chunk.indexOf(LF, pos) : -1;
      } while (nl >= 0);
      this.copyIn(chunk);
    }
    if (pos < n) {
      p.order = this.order++;
      p.append(chunk, pos, n);
    }
  }

  /** The stream reached EOF: a line in progress becomes a final line. Later pushes start new lines. */
  end(stream: StreamName): void {
    const code = streamCode(stream);
    const p = this.pending[code];
    if (p.open) this.completePending(p, code);
    p.release();
  }

  /** A tail read (default) or a cursor read (`since`). Never consumes output. */
  read(options: ReadOptions = {}): OutputRead {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(`read options must be an object; received ${describe(options)}`);
    }
    const maxBytes = integerOption('maxBytes', options.maxBytes, DEFAULT_READ_BYTES, 1, Number.MAX_SAFE_INTEGER);
    const total = this.total;
    const firstSeq = total - this.count;
    const partials = this.partialLines();
    const lines: OutputLine[] = [];
    let budget = maxBytes;
    let limitedByBytes = false;
    /** Adds a line if it fits; the first line of a read is clipped to fit. False: stop. */
    const take = (line: OutputLine): boolean => {
      const bytes = Buffer.byteLength(line.text, 'utf8');
      if (bytes <= budget) {
        budget -= bytes;
        lines.push(line);
        return true;
      }
      limitedByBytes = true;
      if (lines.length === 0) {
        const text = clipUtf8(line.text, budget);
        line.clippedBytes = bytes - Buffer.byteLength(text, 'utf8');
        line.text = text;
        budget = 0;
        lines.push(line);
      }
      return false;
    };

    let since: number;
    let earlier: number;
    let dropped: number;
    let next: number;
    if (options.since === undefined) {
      const tail = integerOption('tail', options.tail, DEFAULT_TAIL, 0, Number.MAX_SAFE_INTEGER);
      since = -1;
      // Newest first, then reversed: partial lines, then complete lines down to the tail's start.
      let want = tail;
      for (let k = partials.length - 1; k >= 0 && want > 0; k--, want--) {
        if (!take(partials[k]!)) break;
      }
      if (!limitedByBytes) {
        const stop = Math.max(firstSeq, total - want);
        for (let seq = total - 1; seq >= stop; seq--) {
          if (!take(this.ringLine(seq))) break;
        }
      }
      lines.reverse();
      earlier = firstComplete(lines) ?? total;
      dropped = firstSeq;
      next = total - 1;
    } else {
      since = integerOption('since', options.since, -1, -1, Number.MAX_SAFE_INTEGER);
      const limit = integerOption('limit', options.limit, Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER);
      const from = Math.max(since + 1, firstSeq);
      let seq = from;
      let open = true;
      for (; seq < total && lines.length < limit; seq++) {
        if (!take(this.ringLine(seq))) {
          open = false;
          break;
        }
      }
      if (open && seq >= total) {
        for (const line of partials) {
          if (lines.length >= limit || !take(line)) break;
        }
      }
      let last: number | undefined;
      for (const line of lines) if (line.partial === undefined) last = line.seq;
      earlier = firstComplete(lines) ?? Math.min(total, from);
      dropped = Math.max(0, firstSeq - (since + 1));
      next = last ?? since;
    }

    // Head lines the caller has not seen: after `since` and before the first line returned.
    const head: OutputLine[] = [];
    const headEnd = firstComplete(lines) ?? (options.since === undefined ? total : firstSeq);
    if (!limitedByBytes) {
      for (const h of this.head) {
        if (h.seq <= since) continue;
        if (h.seq >= headEnd) break;
        const line = toLine(h.seq, h.stream, h.raw, 0, h.raw.length, h.cut);
        const bytes = Buffer.byteLength(line.text, 'utf8');
        if (bytes > budget) {
          limitedByBytes = true;
          break;
        }
        budget -= bytes;
        head.push(line);
      }
    }

    return {
      lines,
      head,
      earlier,
      dropped,
      next,
      totalLines: total,
      truncatedLines: this.truncatedLines,
      limitedByBytes,
    };
  }

  stats(): OutputStats {
    let pendingBytes = 0;
    for (const p of this.pending) if (p.open) pendingBytes += p.len;
    return {
      totalLines: this.total,
      droppedLines: this.droppedLines,
      truncatedLines: this.truncatedLines,
      truncatedBytes: this.truncatedBytes,
      bytesIn: this.bytesIn,
      retainedLines: this.count,
      retainedBytes: this.retained,
      pendingBytes,
      headBytes: this.headBytes,
    };
  }

  // --- ingest -----------------------------------------------------------------------------------

  /**
   * Records a completed line at `src[off, off + len)` (`src` is the buffer being ingested, whose
   * lines `copyIn` then stores) and evicts what the bounds require.
   */
  private addLine(stream: number, src: Buffer, off: number, len: number, cut: number): void {
    const seq = this.total;
    if (cut > 0) {
      this.truncatedLines++;
      this.truncatedBytes += cut;
    }
    if (seq < this.headLines) {
      const raw = Buffer.from(src.subarray(off, off + len));
      this.head.push({ seq, stream, raw, cut });
      this.headBytes += len;
    }
    if (this.count === this.cap) {
      if (this.cap < this.maxLines) this.grow();
      else this.evict();
    }
    let i = this.first + this.count;
    if (i >= this.cap) i -= this.cap;
    this.offs[i] = off;
    this.lens[i] = len;
    this.cuts[i] = cut;
    this.streams[i] = stream;
    this.count++;
    this.total++;
    this.retained += len;
    // maxLineBytes <= maxBytes, so this never evicts the line just added.
    while (this.retained > this.maxBytes) this.evict();
  }

  /** Drops the oldest line; if it was in the arena, the arena now starts at the next line. */
  private evict(): void {
    const i = this.first;
    const seq = this.total - this.count;
    this.retained -= this.lens[i]!;
    this.first = i + 1 === this.cap ? 0 : i + 1;
    this.count--;
    this.droppedLines++;
    if (seq < this.inSource) {
      if (seq + 1 < this.inSource && this.count > 0) this.arenaHead = this.offs[this.first]!;
      else this.arenaHead = this.arenaTail = 0; // the arena is empty: start again at its start
    }
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

  /**
   * Copies the lines recorded from `src` that survived into the arena, so the ring keeps no
   * reference to `src`. Neighbouring lines (at most RUN_MAX_GAP bytes apart) share one copy.
   */
  private copyIn(src: Buffer): void {
    const total = this.total;
    const from = Math.max(this.inSource, total - this.count);
    if (from >= total) {
      this.inSource = Infinity;
      return;
    }
    const offs = this.offs;
    const lens = this.lens;
    const cap = this.cap;
    const i0 = this.index(from);
    const iLast = this.index(total - 1);
    // Arena room: the span from the first survivor to the end of the last one bounds what the runs
    // take; only when that does not fit is the exact amount worked out.
    let need = offs[iLast]! + lens[iLast]! - offs[i0]!;
    if (this.arenaTail - this.arenaHead + need > this.arena.length) {
      need = 0;
      let prevEnd = -1;
      for (let seq = from, i = i0; seq < total; seq++) {
        const off = offs[i]!;
        const gap = off - prevEnd;
        if (prevEnd >= 0 && gap <= RUN_MAX_GAP) need += gap;
        need += lens[i]!;
        prevEnd = off + lens[i]!;
        if (++i === cap) i = 0;
      }
      this.reserve(need);
    }
    let runFirst = i0;
    let runCount = 1;
    let runStart = offs[i0]!;
    let runEnd = runStart + lens[i0]!;
    let i = i0;
    for (let seq = from + 1; seq < total; seq++) {
      if (++i === cap) i = 0;
      const off = offs[i]!;
      if (off - runEnd <= RUN_MAX_GAP) {
        runEnd = off + lens[i]!;
        runCount++;
        continue;
      }
      this.storeRun(src, runFirst, runCount, runStart, runEnd);
      runFirst = i;
      runCount = 1;
      runStart = off;
      runEnd = off + lens[i]!;
    }
    this.storeRun(src, runFirst, runCount, runStart, runEnd);
    this.inSource = Infinity;
  }

  /** Appends `src[start, end)` to the arena: the run of `count` lines from index `i` on. */
  private storeRun(src: Buffer, i: number, count: number, start: number, end: number): void {
    const at = this.arenaTail;
    const shift = at - start;
    for (let k = 0; k < count; k++) {
      this.offs[i] = this.offs[i]! + shift;
      if (++i === this.cap) i = 0;
    }
    const n = end - start;
    if (n === 0) return;
    const arena = this.arena;
    const p = at % arena.length;
    const first = Math.min(n, arena.length - p);
    src.copy(arena, p, start, start + first);
    if (first < n) src.copy(arena, 0, start + first, end);
    this.arenaTail = at + n;
  }

  /**
   * Makes room in the arena for `need` more bytes: grows it (doubling, up to `arenaMax`). Called
   * before any line of the source is stored. The arena is a resizable ArrayBuffer reserved at
   * `arenaMax`, so growing commits more of it in place: nothing is copied to a new buffer, and no
   * old one is left for the GC (a copy per doubling would leave up to `arenaMax` of garbage per
   * ring, which V8 collects late). Only when a resizable buffer cannot be had does it copy.
   */
  private reserve(need: number): void {
    let used = this.arenaTail - this.arenaHead;
    if (used + need <= this.arena.length) return;
    if (used + need > this.arenaMax) {
      // Only when `maxBytes` is near the largest possible Buffer (`arenaMax` is then MAX_LENGTH):
      // the bounds alone do not fit, so stored lines go early. No source is longer than
      // MAX_LENGTH, so once the stored lines are gone the source's lines fit.
      while (used + need > this.arenaMax && this.total - this.count < this.inSource) {
        this.evict();
        used = this.arenaTail - this.arenaHead;
      }
      if (used + need <= this.arena.length) return;
    }
    const old = this.arena;
    let size = Math.max(MIN_ARENA_BYTES, old.length * 2);
    while (size < used + need) size *= 2;
    size = Math.min(size, this.arenaMax);

    // Where the oldest stored byte is in the old arena, and how many bytes run past its end.
    const headAt = old.length > 0 ? this.arenaHead % old.length : 0;
    const wrapped = Math.max(0, headAt + used - old.length);
    let arena: Buffer;
    let newHeadAt: number;
    const buffer = this.arenaBuffer;
    if (buffer && size <= buffer.maxByteLength) {
      buffer.resize(size);
      arena = Buffer.from(buffer, 0, size);
      // The bytes stay where they are; a wrapped piece at the end moves to the new end, so the
      // contents are again one circular run.
      newHeadAt = headAt;
      if (wrapped > 0) {
        newHeadAt = size - (old.length - headAt);
        arena.copyWithin(newHeadAt, headAt, old.length);
      }
    } else {
      arena = this.allocateArena(size);
      newHeadAt = 0;
      if (used > 0) {
        old.copy(arena, 0, headAt, headAt + used - wrapped);
        if (wrapped > 0) old.copy(arena, used - wrapped, 0, wrapped);
      }
    }
    // The stored lines keep their place in the circular run: shift their positions to match.
    const shift = newHeadAt - this.arenaHead;
    const stored = Math.min(this.inSource, this.total) - (this.total - this.count);
    for (let k = 0, i = this.first; k < stored; k++) {
      this.offs[i] = this.offs[i]! + shift;
      if (++i === this.cap) i = 0;
    }
    this.arena = arena;
    this.arenaHead = newHeadAt;
    this.arenaTail = newHeadAt + used;
  }

  /** A new arena of `size` bytes: resizable up to `arenaMax` where the runtime allows it. */
  private allocateArena(size: number): Buffer {
    if (this.arenaBuffer === undefined) {
      try {
        const buffer = new ResizableArrayBuffer(size, { maxByteLength: this.arenaMax });
        if (buffer.resizable && buffer.byteLength === size) {
          this.arenaBuffer = buffer;
          return Buffer.from(buffer, 0, size);
        }
      } catch {
        // Address space for `arenaMax` not to be had (or no resizable buffers): a fixed arena.
      }
      this.arenaBuffer = null;
    }
    return Buffer.allocUnsafeSlow(size);
  }

  /** The line in progress on `p` is complete: it goes into the arena straight from `p`'s buffer. */
  private completePending(p: PendingLine, stream: number): void {
    const raw = p.view();
    this.inSource = this.total;
    this.addLine(stream, raw, 0, raw.length, p.cut);
    this.copyIn(raw);
    p.reset();
  }

  // --- reading ----------------------------------------------------------------------------------

  private index(seq: number): number {
    const i = this.first + (seq - (this.total - this.count));
    return i >= this.cap ? i - this.cap : i;
  }

  private ringLine(seq: number): OutputLine {
    const i = this.index(seq);
    const len = this.lens[i]!;
    let raw = EMPTY;
    let start = 0;
    if (len > 0) {
      const arena = this.arena;
      const p = this.offs[i]! % arena.length;
      if (p + len <= arena.length) {
        raw = arena;
        start = p;
      } else {
        // The line wraps around the end of the arena: join its two pieces (only for this read).
        raw = Buffer.concat([arena.subarray(p), arena.subarray(0, p + len - arena.length)], len);
      }
    }
    return toLine(seq, this.streams[i]!, raw, start, start + len, this.cuts[i]!);
  }

  /** Lines in progress, in the order they started, numbered with the seqs they are expected to get. */
  private partialLines(): OutputLine[] {
    const open = this.pending
      .map((p, stream) => ({ p, stream }))
      .filter(({ p }) => p.open && (p.len > 0 || p.cut > 0))
      .sort((a, b) => a.p.order - b.p.order);
    return open.map(({ p, stream }, k) => {
      const raw = p.view();
      const line = toLine(this.total + k, stream, raw, 0, raw.length, p.cut, true);
      line.partial = true;
      return line;
    });
  }
}

function toLine(
  seq: number,
  stream: number,
  raw: Buffer,
  start: number,
  end: number,
  cut: number,
  open = false,
): OutputLine {
  return {
    seq,
    stream: STREAMS[stream]!,
    text: renderLine(raw, { start, end, open: open || cut > 0 }),
    cutBytes: cut,
  };
}

function firstComplete(lines: readonly OutputLine[]): number | undefined {
  const line = lines[0];
  return line !== undefined && line.partial === undefined ? line.seq : undefined;
}

function streamCode(stream: StreamName): 0 | 1 {
  if (stream === 'stdout') return 0;
  if (stream === 'stderr') return 1;
  throw new TypeError(`stream must be 'stdout' or 'stderr'; received ${describe(stream)}`);
}

function integerLimit(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') {
    throw new TypeError(`OutputRing limit ${name} must be an integer from ${min} to ${max}; received ${describe(value)}`);
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`OutputRing limit ${name} must be an integer from ${min} to ${max}; received ${describe(value)}`);
  }
  return value;
}

function integerOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') {
    throw new TypeError(`read option ${name} must be an integer from ${min} to ${max}; received ${describe(value)}`);
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`read option ${name} must be an integer from ${min} to ${max}; received ${describe(value)}`);
  }
  return value;
}

function describe(value: unknown): string {
  return inspect(value, { depth: 1, breakLength: Infinity });
}
