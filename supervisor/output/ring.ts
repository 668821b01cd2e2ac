/**
 * The per-job output ring that lives in the supervisor (SPEC 5).
 *
 * Ingest (`push`) is the hot path: the supervisor must read as fast as the job writes. It splits on
 * `\n` with `Buffer.indexOf`, records each completed line as (buffer, offset, length) in a circular
 * set of typed arrays, and evicts the oldest entries as the line and byte bounds require. Lines are
 * first recorded as views of the incoming chunk; only when the chunk is done are the survivors
 * copied out (runs of neighbouring short lines in one copy), so lines that a big chunk pushes out
 * again are never copied, and no reference to the chunk outlives `push`. All text work (the
 * bare-`\r` rule, ANSI removal, UTF-8 escaping) happens in `render.ts` when a line is read.
 *
 * Memory per ring: the retained line bytes (at most `maxBytes`), plus at most one partly evicted
 * copy-out run (at most 64 KiB), one `maxLineBytes` buffer per stream with a line in progress, the
 * head lines (at most `headLines` x `maxLineBytes`) and a few dozen bytes of bookkeeping per line.
 */
import type { OutputLine, OutputRead, StreamName } from '../../src/protocol/output.js';
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
const EMPTY = Buffer.alloc(0);
/** Default read size: 50 lines (SPEC 5) within 64 KiB of text. */
const DEFAULT_TAIL = 50;
const DEFAULT_READ_BYTES = 64 * 1024;
/** Cap on one copy-out run, so a partly evicted run wastes little. */
const RUN_MAX_BYTES = 64 * 1024;
/** Separator bytes between two stored lines that are copied along with them (`\n`, `\r\n`, ...). */
const RUN_MAX_GAP = 16;
/** Ring arrays start this small and double up to `maxLines`, so quiet jobs cost little. */
const MIN_CAPACITY = 64;
const MAX_LINES_LIMIT = 2 ** 24;
const MAX_LINE_BYTES_LIMIT = 2 ** 30;

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
  private readonly runMaxBytes: number;

  // The ring: entry k (0 = oldest) is at index (first + k) % cap; its seq is total - count + k.
  private cap = 0;
  private first = 0;
  private count = 0;
  private bufs: (Buffer | undefined)[] = [];
  private offs = new Uint32Array(0);
  private lens = new Uint32Array(0);
  private cuts = new Float64Array(0);
  private streams = new Uint8Array(0);
  private retained = 0;

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
    this.runMaxBytes = Math.min(RUN_MAX_BYTES, maxBytes);
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
    const firstInChunk = this.total;
    const maxLineBytes = this.maxLineBytes;
    while (nl >= 0) {
      const end = nl > pos && chunk[nl - 1] === CR ? nl - 1 : nl;
      if (end - pos <= maxLineBytes) this.addLine(code, chunk, pos, end - pos, 0);
      else {
        const r = this.range;
        cutLongLine(chunk, pos, end, maxLineBytes, r);
        this.addLine(code, chunk, r.start, r.len, r.cut);
      }
      pos = nl + 1;
      nl = pos < n ? chunk.indexOf(LF, pos) : -1;
    }
    if (pos < n) {
      p.order = this.order++;
      p.append(chunk, pos, n);
    }
    if (this.total > firstInChunk) this.copyOut(chunk, firstInChunk);
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

  /** Records a completed line stored at `buf[off, off + len)`. `buf` may be the chunk being pushed. */
  private addLine(stream: number, buf: Buffer, off: number, len: number, cut: number): void {
    const seq = this.total++;
    if (cut > 0) {
      this.truncatedLines++;
      this.truncatedBytes += cut;
    }
    if (seq < this.headLines) {
      const raw = Buffer.from(buf.subarray(off, off + len));
      this.head.push({ seq, stream, raw, cut });
      this.headBytes += len;
    }
    if (this.count === this.cap) {
      if (this.cap < this.maxLines) this.grow();
      else this.evict();
    }
    let i = this.first + this.count;
    if (i >= this.cap) i -= this.cap;
    this.bufs[i] = buf;
    this.offs[i] = off;
    this.lens[i] = len;
    this.cuts[i] = cut;
    this.streams[i] = stream;
    this.count++;
    this.retained += len;
    // maxLineBytes <= maxBytes, so this never evicts the line just added.
    while (this.retained > this.maxBytes) this.evict();
  }

  private evict(): void {
    const i = this.first;
    this.retained -= this.lens[i]!;
    this.bufs[i] = undefined;
    this.first = i + 1 === this.cap ? 0 : i + 1;
    this.count--;
    this.droppedLines++;
  }

  private grow(): void {
    const cap = Math.min(this.maxLines, Math.max(MIN_CAPACITY, this.cap * 2));
    const bufs = new Array<Buffer | undefined>(cap).fill(undefined);
    const offs = new Uint32Array(cap);
    const lens = new Uint32Array(cap);
    const cuts = new Float64Array(cap);
    const streams = new Uint8Array(cap);
    for (let k = 0, i = this.first; k < this.count; k++) {
      bufs[k] = this.bufs[i];
      offs[k] = this.offs[i]!;
      lens[k] = this.lens[i]!;
      cuts[k] = this.cuts[i]!;
      streams[k] = this.streams[i]!;
      if (++i === this.cap) i = 0;
    }
    this.bufs = bufs;
    this.offs = offs;
    this.lens = lens;
    this.cuts = cuts;
    this.streams = streams;
    this.first = 0;
    this.cap = cap;
  }

  /**
   * Copies the lines of `chunk` that survived the push out of it, so the ring keeps no reference
   * to the chunk. Neighbouring lines share one copy (a run) up to `runMaxBytes`.
   */
  private copyOut(chunk: Buffer, firstInChunk: number): void {
    const total = this.total;
    let seq = Math.max(firstInChunk, total - this.count);
    if (seq >= total) return;
    let i = this.index(seq);
    let runFirst = i;
    let runCount = 1;
    let runStart = this.offs[i]!;
    let runEnd = runStart + this.lens[i]!;
    for (seq++; seq < total; seq++) {
      if (++i === this.cap) i = 0;
      const off = this.offs[i]!;
      const end = off + this.lens[i]!;
      if (off - runEnd <= RUN_MAX_GAP && end - runStart <= this.runMaxBytes) {
        runEnd = end;
        runCount++;
        continue;
      }
      this.copyRun(chunk, runFirst, runCount, runStart, runEnd);
      runFirst = i;
      runCount = 1;
      runStart = off;
      runEnd = end;
    }
    this.copyRun(chunk, runFirst, runCount, runStart, runEnd);
  }

  private copyRun(chunk: Buffer, i: number, count: number, start: number, end: number): void {
    let region = EMPTY;
    if (end > start) {
      region = Buffer.allocUnsafeSlow(end - start);
      chunk.copy(region, 0, start, end);
    }
    for (let k = 0; k < count; k++) {
      this.bufs[i] = region;
      this.offs[i] = this.offs[i]! - start;
      if (++i === this.cap) i = 0;
    }
  }

  private completePending(p: PendingLine, stream: number): void {
    const { raw, cut } = p.finish();
    this.addLine(stream, raw, 0, raw.length, cut);
  }

  // --- reading ----------------------------------------------------------------------------------

  private index(seq: number): number {
    const i = this.first + (seq - (this.total - this.count));
    return i >= this.cap ? i - this.cap : i;
  }

  private ringLine(seq: number): OutputLine {
    const i = this.index(seq);
    const off = this.offs[i]!;
    return toLine(seq, this.streams[i]!, this.bufs[i]!, off, off + this.lens[i]!, this.cuts[i]!);
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
