/**
 * Reads of an output ring (SPEC 5): a tail read (the last N lines) or a cursor read (the lines
 * after a seq), within a byte budget on the rendered text, plus the head lines (the first lines of
 * the job, kept after the ring wrapped) that the caller has not seen. Reads never consume output.
 */
import { READ_MAX_BYTES, READ_TAIL_LINES, type OutputLine, type OutputRead } from '../../src/protocol/output.js';
import { checkInteger, describeValue } from '../../src/protocol/describe.js';
import { STREAMS } from './line-index.js';
import { clipUtf8, renderLine } from './render.js';

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

/** Default read size: 50 lines (SPEC 5) within 64 KiB of text. */
export const DEFAULT_TAIL = READ_TAIL_LINES;
export const DEFAULT_READ_BYTES = READ_MAX_BYTES;

/** A line as a ring keeps it: raw bytes, the stream's code, and the bytes cut from it. */
export interface RawLine {
  seq: number;
  stream: number;
  raw: Buffer;
  cut: number;
}

/** What a read needs from the ring it reads. */
export interface ReadSource {
  /** Completed lines so far: the next completed line gets this seq. */
  readonly total: number;
  /** The oldest completed line still held. */
  readonly firstSeq: number;
  readonly truncatedLines: number;
  /** Held line `seq` (firstSeq <= seq < total), rendered. */
  line(seq: number): OutputLine;
  /** Lines in progress, oldest first, numbered with the seqs they are expected to get. */
  partialLines(): OutputLine[];
  /** The head lines, in seq order. */
  readonly head: readonly RawLine[];
}

/** Renders raw line bytes `raw[start, end)` as an OutputLine. `open`: the line is unfinished. */
export function outputLine(seq: number, stream: number, raw: Buffer, start: number, end: number, cut: number, open = false): OutputLine {
  return {
    seq,
    stream: STREAMS[stream]!,
    text: renderLine(raw, { start, end, open: open || cut > 0 }),
    cutBytes: cut,
  };
}

/** A tail read (default) or a cursor read (`since`) of `source`. */
export function readOutput(source: ReadSource, options: ReadOptions): OutputRead {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`read options must be an object; received ${describeValue(options)}`);
  }
  const maxBytes = option('maxBytes', options.maxBytes, DEFAULT_READ_BYTES, 1);
  const total = source.total;
  const firstSeq = source.firstSeq;
  const partials = source.partialLines();
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
    const tail = option('tail', options.tail, DEFAULT_TAIL, 0);
    since = -1;
    // Newest first, then reversed: partial lines, then complete lines down to the tail's start.
    let want = tail;
    for (let k = partials.length - 1; k >= 0 && want > 0; k--, want--) {
      if (!take(partials[k]!)) break;
    }
    if (!limitedByBytes) {
      const stop = Math.max(firstSeq, total - want);
      for (let seq = total - 1; seq >= stop; seq--) {
        if (!take(source.line(seq))) break;
      }
    }
    lines.reverse();
    earlier = firstComplete(lines) ?? total;
    dropped = firstSeq;
    next = total - 1;
  } else {
    since = option('since', options.since, -1, -1);
    const limit = option('limit', options.limit, Number.MAX_SAFE_INTEGER, 0);
    const from = Math.max(since + 1, firstSeq);
    let seq = from;
    let open = true;
    for (; seq < total && lines.length < limit; seq++) {
      if (!take(source.line(seq))) {
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
    // A cursor past the end reads on from the last line, not from beyond lines not yet written.
    next = last ?? Math.min(since, total - 1);
  }

  // Head lines the caller has not seen: after `since` and before the first line returned.
  const head: OutputLine[] = [];
  const headEnd = firstComplete(lines) ?? (options.since === undefined ? total : firstSeq);
  if (!limitedByBytes) {
    for (const h of source.head) {
      if (h.seq <= since) continue;
      if (h.seq >= headEnd) break;
      const line = outputLine(h.seq, h.stream, h.raw, 0, h.raw.length, h.cut);
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
    truncatedLines: source.truncatedLines,
    limitedByBytes,
  };
}

/** A read option: `fallback` when absent, else an integer from `min` up (TypeError/RangeError naming it). */
export function option(name: string, value: unknown, fallback: number, min: number): number {
  return value === undefined ? fallback : checkInteger(`read option ${name}`, value, min, Number.MAX_SAFE_INTEGER);
}

function firstComplete(lines: readonly OutputLine[]): number | undefined {
  const line = lines[0];
  return line !== undefined && line.partial === undefined ? line.seq : undefined;
}
