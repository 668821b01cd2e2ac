/**
 * The per-job output ring that lives in the supervisor (SPEC 5): ingest, eviction, and the
 * composition of its parts.
 *
 * Ingest (`push`) is the hot path: the supervisor must read as fast as the job writes, and during a
 * flood it must not allocate at the ingest rate (external memory is only given back when V8's GC
 * gets round to it). So the ring's storage is allocated once and then reused:
 *
 *  - the line bytes live in one circular byte arena per ring (`arena.ts`), in seq order;
 *  - line metadata (position, length, cut bytes, stream) lives in a circular index of typed
 *    arrays (`line-index.ts`) that doubles up to `maxLines`;
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
 * bytes only). No reference to the chunk outlives `push`. All text work (the bare-`\r` rule, ANSI
 * removal, UTF-8 escaping) happens in `render.ts` when a line is read (`read.ts`).
 *
 * Memory per ring: the arena (at most `maxBytes + 2 * maxLines`, and at most 64 KiB or twice the
 * most its lines have needed), the index (21 bytes a line, at most `maxLines` lines), one
 * `maxLineBytes` buffer per stream that has had a partial line, and the head lines (at most
 * `headLines` x `maxLineBytes`). In steady state ingest allocates nothing.
 */
import type { OutputLine, OutputRead, StreamName } from '../../src/protocol/output.js';
import { constants as bufferConstants } from 'node:buffer';
import { ByteArena } from './arena.js';
import { LineIndex, streamCode } from './line-index.js';
import { resolveOutputLimits, type OutputLimits } from './limits.js';
import { cutLongLine, PendingLine, type LineRange } from './line-splitter.js';
import { outputLine, readOutput, type RawLine, type ReadOptions, type ReadSource } from './read.js';

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
/**
 * Separator bytes between two lines of a chunk (`\n`, `\r\n`) that are copied into the arena along
 * with them, so the two lines take one copy. Each stored line but the newest may carry this many.
 */
const RUN_MAX_GAP = 2;

export class OutputRing {
  readonly limits: Readonly<OutputLimits>;
  private readonly maxLineBytes: number;
  private readonly maxBytes: number;
  private readonly headLines: number;

  /**
   * Line k's offset in the index is a virtual arena position for lines with seq < `inSource`
   * (stored in the arena, from the oldest line's position to the end of the newest one's). Lines
   * with seq >= `inSource` are still ranges of the buffer being ingested (the chunk, or a pending
   * line), to be copied in by `copyIn` before `push` or `end` returns.
   */
  private readonly index: LineIndex;
  private readonly arena: ByteArena;
  private inSource = Infinity;
  /** Raw line bytes retained (what the byte bound limits; separators in the arena not counted). */
  private retained = 0;

  private readonly head: RawLine[] = [];
  private headBytes = 0;
  private readonly pending: readonly [PendingLine, PendingLine];
  /** Scratch result of `cutLongLine`. */
  private readonly range: LineRange = { start: 0, len: 0, cut: 0 };

  /** Told of each completed line as it is ingested (notify watches): none, in the common case. */
  private readonly taps = new Set<(line: OutputLine) => void>();

  private droppedLines = 0;
  private truncatedLines = 0;
  private truncatedBytes = 0;
  private bytesIn = 0;
  private order = 0;

  constructor(limits: Partial<OutputLimits> = {}) {
    this.limits = resolveOutputLimits(limits);
    const { maxLines, maxLineBytes, maxBytes, headLines } = this.limits;
    this.maxLineBytes = maxLineBytes;
    this.maxBytes = maxBytes;
    this.headLines = headLines;
    this.index = new LineIndex(maxLines);
    // All that the two bounds let the ring keep (see above).
    this.arena = new ByteArena(Math.min(maxBytes + RUN_MAX_GAP * maxLines, bufferConstants.MAX_LENGTH));
    this.pending = [new PendingLine(maxLineBytes), new PendingLine(maxLineBytes)];
  }

  /**
   * Calls `tap` with each line completed from now on, rendered as a read renders it, before any
   * bound can evict it; returns the function that stops it. A tap must not throw.
   */
  tap(tap: (line: OutputLine) => void): () => void {
    this.taps.add(tap);
    return () => this.taps.delete(tap);
  }

  /** Completed lines so far; compare with an earlier value to notice new lines cheaply. */
  get lineCount(): number {
    return this.index.total;
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
      this.inSource = this.index.total;
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
    return readOutput(this.source(), options);
  }

  /** What a read sees of the ring now (a filtered read, `filter.ts`, scans it too). */
  source(): ReadSource {
    const index = this.index;
    return {
      total: index.total,
      firstSeq: index.firstSeq,
      truncatedLines: this.truncatedLines,
      head: this.head,
      line: (seq) => this.storedLine(seq),
      partialLines: () => this.partialLines(),
    };
  }

  stats(): OutputStats {
    let pendingBytes = 0;
    for (const p of this.pending) if (p.open) pendingBytes += p.len;
    return {
      totalLines: this.index.total,
      droppedLines: this.droppedLines,
      truncatedLines: this.truncatedLines,
      truncatedBytes: this.truncatedBytes,
      bytesIn: this.bytesIn,
      retainedLines: this.index.count,
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
    const index = this.index;
    const seq = index.total;
    if (cut > 0) {
      this.truncatedLines++;
      this.truncatedBytes += cut;
    }
    if (seq < this.headLines) {
      const raw = Buffer.from(src.subarray(off, off + len));
      this.head.push({ seq, stream, raw, cut });
      this.headBytes += len;
    }
    if (this.taps.size > 0) {
      const line = outputLine(seq, stream, src, off, off + len, cut);
      for (const tap of this.taps) tap(line);
    }
    if (!index.hasRoom()) this.evict();
    index.add(off, len, cut, stream);
    this.retained += len;
    // maxLineBytes <= maxBytes, so this never evicts the line just added.
    while (this.retained > this.maxBytes) this.evict();
  }

  /** Drops the oldest line; if it was in the arena, the arena now starts at the next line. */
  private evict(): void {
    const index = this.index;
    const seq = index.firstSeq;
    this.retained -= index.dropOldest();
    this.droppedLines++;
    if (seq < this.inSource) {
      if (seq + 1 < this.inSource && index.count > 0) this.arena.dropBefore(index.offset(index.slot(seq + 1)));
      else this.arena.clear();
    }
  }

  /**
   * Copies the lines recorded from `src` that survived into the arena, so the ring keeps no
   * reference to `src`. Neighbouring lines (at most RUN_MAX_GAP bytes apart) share one copy.
   */
  private copyIn(src: Buffer): void {
    const index = this.index;
    const total = index.total;
    const from = Math.max(this.inSource, index.firstSeq);
    if (from >= total) {
      this.inSource = Infinity;
      return;
    }
    const i0 = index.slot(from);
    const iLast = index.slot(total - 1);
    // Arena room: the span from the first survivor to the end of the last one bounds what the runs
    // take; only when that does not fit is the exact amount worked out.
    let need = index.offset(iLast) + index.length(iLast) - index.offset(i0);
    if (!this.arena.fits(need)) {
      need = 0;
      let prevEnd = -1;
      for (let seq = from, i = i0; seq < total; seq++, i = index.next(i)) {
        const off = index.offset(i);
        const gap = off - prevEnd;
        if (prevEnd >= 0 && gap <= RUN_MAX_GAP) need += gap;
        need += index.length(i);
        prevEnd = off + index.length(i);
      }
      this.reserve(need);
    }
    let runFirst = i0;
    let runCount = 1;
    let runStart = index.offset(i0);
    let runEnd = runStart + index.length(i0);
    let i = i0;
    for (let seq = from + 1; seq < total; seq++) {
      i = index.next(i);
      const off = index.offset(i);
      if (off - runEnd <= RUN_MAX_GAP) {
        runEnd = off + index.length(i);
        runCount++;
        continue;
      }
      this.storeRun(src, runFirst, runCount, runStart, runEnd);
      runFirst = i;
      runCount = 1;
      runStart = off;
      runEnd = off + index.length(i);
    }
    this.storeRun(src, runFirst, runCount, runStart, runEnd);
    this.inSource = Infinity;
  }

  /** Appends `src[start, end)` to the arena: the run of `count` lines from slot `slot` on. */
  private storeRun(src: Buffer, slot: number, count: number, start: number, end: number): void {
    this.index.shift(slot, count, this.arena.end - start);
    this.arena.append(src, start, end);
  }

  /**
   * Makes room in the arena for `need` more bytes, before any line of the source is stored:
   * grows it, and moves the stored lines' positions with it.
   */
  private reserve(need: number): void {
    const arena = this.arena;
    const index = this.index;
    if (arena.fits(need)) return;
    if (arena.used + need > arena.max) {
      // Only when `maxBytes` is near the largest possible Buffer (the arena's bound is then
      // MAX_LENGTH): the bounds alone do not fit, so stored lines go early. No source is longer
      // than MAX_LENGTH, so once the stored lines are gone the source's lines fit.
      while (arena.used + need > arena.max && index.firstSeq < this.inSource) this.evict();
      if (arena.fits(need)) return;
    }
    const shift = arena.grow(need);
    const stored = Math.min(this.inSource, index.total) - index.firstSeq;
    index.shift(index.slot(index.firstSeq), stored, shift);
  }

  /** The line in progress on `p` is complete: it goes into the arena straight from `p`'s buffer. */
  private completePending(p: PendingLine, stream: number): void {
    const raw = p.view();
    this.inSource = this.index.total;
    this.addLine(stream, raw, 0, raw.length, p.cut);
    this.copyIn(raw);
    p.reset();
  }

  // --- what reads see ---------------------------------------------------------------------------

  private storedLine(seq: number): OutputLine {
    const index = this.index;
    const i = index.slot(seq);
    const len = index.length(i);
    const [raw, start] = this.arena.span(index.offset(i), len);
    return outputLine(seq, index.stream(i), raw, start, start + len, index.cut(i));
  }

  /** Lines in progress, in the order they started, numbered with the seqs they are expected to get. */
  private partialLines(): OutputLine[] {
    const open = this.pending
      .map((p, stream) => ({ p, stream }))
      .filter(({ p }) => p.open && (p.len > 0 || p.cut > 0))
      .sort((a, b) => a.p.order - b.p.order);
    return open.map(({ p, stream }, k) => {
      const raw = p.view();
      const line = outputLine(this.index.total + k, stream, raw, 0, raw.length, p.cut, true);
      line.partial = true;
      return line;
    });
  }
}
