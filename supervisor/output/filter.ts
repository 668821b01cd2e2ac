/**
 * A filtered read (protocol: `read` with `filter`): the kept lines that match a pattern, found
 * where the lines are (one round trip, no text sent that the caller would throw away). The kept
 * lines are the head lines the ring no longer holds, the ring's lines, then the lines in progress,
 * in seq order; each line found keeps its seq, which is the number a report shows and `since` takes.
 *
 * Which matches a read returns, within `maxBytes` of text:
 *  - without `limit`: the newest `tail` (a model looking for the error of a long build);
 *  - with `limit` (a paging read after `since`): the first `limit` after `since`, oldest first;
 *    `next` is then where the next page starts.
 * Either way `matched` counts every kept line after `since` that matches.
 *
 * The pattern comes from a model and is run by RE2 (src/protocol/pattern.ts): linear in each line,
 * but a ring may hold 100 000 lines, so the scan lets the event loop run every SLICE_MS of work.
 * Lines that fall off the ring meanwhile are counted as not searched (`dropped`).
 */
import type { LinePattern } from '../../src/protocol/pattern.js';
import type { OutputLine, OutputRead } from '../../src/protocol/output.js';
import { DEFAULT_READ_BYTES, DEFAULT_TAIL, option, outputLine, type ReadSource } from './read.js';
import { clipUtf8 } from './render.js';

export interface FilterOptions {
  /** Only lines with seq > since; -1 (the default) searches every kept line. */
  since?: number;
  /** Without `limit`: return the newest N matches. Default: 50. */
  tail?: number;
  /** Return the first N matches after `since`, oldest first. */
  limit?: number;
  /** Bound on the rendered text bytes returned. Default: 65536. */
  maxBytes?: number;
}

/** Matching time after which the scan lets the event loop run. */
const SLICE_MS = 10;

/** `source()` is asked again after each pause: the ring may have moved on meanwhile. */
export async function filterOutput(source: () => ReadSource, pattern: LinePattern, options: FilterOptions): Promise<OutputRead> {
  const since = option('since', options.since, -1, -1);
  const tail = option('tail', options.tail, DEFAULT_TAIL, 0);
  const limit = options.limit === undefined ? undefined : option('limit', options.limit, 0, 0);
  const maxBytes = option('maxBytes', options.maxBytes, DEFAULT_READ_BYTES, 1);

  let ring = source();
  const total = ring.total; // the lines that exist now; later ones are the next read's
  let matched = 0;
  let notSearched = 0;
  /** Without limit: the newest matches so far (trimmed to `tail` now and then). With: all shown. */
  let found: OutputLine[] = [];
  /** The matches this read returns. */
  const shown: OutputLine[] = [];
  let budget = maxBytes;
  let limitedByBytes = false;
  /** With limit: the page is full (by count or bytes); later matches are only counted. */
  let full = limit === 0;

  const keep = (line: OutputLine): void => {
    matched++;
    if (limit === undefined) {
      found.push(line);
      if (found.length > 2 * tail + 64) found = found.slice(found.length - tail);
      return;
    }
    if (full) return;
    if (!fits(line)) {
      full = true;
      return;
    }
    found.push(line);
    if (found.length >= limit) full = true;
  };
  /** Takes the line's bytes from the budget; a first line too long for it is clipped to fit. */
  const fits = (line: OutputLine): boolean => {
    const bytes = Buffer.byteLength(line.text, 'utf8');
    if (bytes <= budget) {
      budget -= bytes;
      return true;
    }
    limitedByBytes = true;
    const first = limit === undefined ? shown.length === 0 : found.length === 0;
    if (!first) return false;
    const text = clipUtf8(line.text, budget);
    line.clippedBytes = bytes - Buffer.byteLength(text, 'utf8');
    line.text = text;
    budget = 0;
    return true;
  };
  let slice = Date.now();
  const pause = async (): Promise<void> => {
    if (Date.now() - slice < SLICE_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    ring = source();
    slice = Date.now();
  };

  // Head lines the ring no longer holds.
  for (const h of ring.head) {
    if (h.seq <= since) continue;
    if (h.seq >= ring.firstSeq) break;
    const line = outputLine(h.seq, h.stream, h.raw, 0, h.raw.length, h.cut);
    if (pattern.test(line.text)) keep(line);
  }
  const headBefore = ring.head.filter((h) => h.seq > since && h.seq < ring.firstSeq).length;
  notSearched += Math.max(0, Math.min(ring.firstSeq, total) - (since + 1) - headBefore);
  // The ring's lines, then those in progress.
  for (let seq = Math.max(since + 1, ring.firstSeq); seq < total; seq++) {
    await pause();
    if (seq < ring.firstSeq) {
      // Fell off the ring during a pause.
      notSearched += ring.firstSeq - seq;
      seq = ring.firstSeq - 1;
      continue;
    }
    const line = ring.line(seq);
    if (pattern.test(line.text)) keep(line);
  }
  if (ring.total === total) {
    for (const line of ring.partialLines()) if (line.seq > since && pattern.test(line.text)) keep(line);
  }

  if (limit === undefined) {
    // The newest `tail` matches that fit, newest first, then in seq order.
    for (let k = found.length - 1; k >= 0 && shown.length < tail; k--) {
      if (!fits(found[k]!)) break;
      shown.push(found[k]!);
    }
    shown.reverse();
  } else {
    shown.push(...found);
  }
  let last: number | undefined;
  for (const line of shown) if (line.partial === undefined) last = line.seq;
  // A page that left matches out reads on after its last line; one that did not, after every line now.
  // Never past the last line: a cursor beyond it reads on from there (issue 28, item 9).
  const next = limit !== undefined && matched > shown.length ? (last ?? Math.min(since, total - 1)) : total - 1;

  return {
    lines: shown,
    head: [],
    earlier: shown[0]?.seq ?? total,
    dropped: notSearched,
    next,
    totalLines: total,
    truncatedLines: ring.truncatedLines,
    limitedByBytes,
    matched,
  };
}
