/**
 * What an output ring may keep (SPEC 5): the limits, their defaults, and the check of limits
 * someone hands the ring. Messages name the limit, the accepted range and the value received.
 */
import { checkInteger, describeValue } from '../../src/protocol/describe.js';
import { OUTPUT_HEAD_LINES, OUTPUT_MAX_BYTES, OUTPUT_MAX_LINE_BYTES, OUTPUT_MAX_LINES } from '../../src/protocol/output.js';

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

/** SPEC 5 defaults, as src/protocol/output.ts gives them to both sides. */
export const DEFAULT_OUTPUT_LIMITS: Readonly<OutputLimits> = Object.freeze({
  maxLines: OUTPUT_MAX_LINES,
  maxLineBytes: OUTPUT_MAX_LINE_BYTES,
  maxBytes: OUTPUT_MAX_BYTES,
  headLines: OUTPUT_HEAD_LINES,
});

/** Bounds that keep the index's typed arrays and one line's buffer allocatable. */
const MAX_LINES_LIMIT = 2 ** 24;
const MAX_LINE_BYTES_LIMIT = 2 ** 30;

/**
 * `limits` with defaults filled in, checked and frozen. A default that a given limit makes
 * impossible gives way to it (a 1000-byte ring gets at most 1000-byte lines; a 10-line ring at
 * most 10 head lines).
 */
export function resolveOutputLimits(limits: Partial<OutputLimits>): Readonly<OutputLimits> {
  if (typeof limits !== 'object' || limits === null) {
    throw new TypeError(`OutputRing limits must be an object; received ${describeValue(limits)}`);
  }
  const d = DEFAULT_OUTPUT_LIMITS;
  const maxLines = limit('maxLines', limits.maxLines, d.maxLines, 1, MAX_LINES_LIMIT);
  const maxBytes = limit('maxBytes', limits.maxBytes, d.maxBytes, 1, Number.MAX_SAFE_INTEGER);
  const lineMax = Math.min(MAX_LINE_BYTES_LIMIT, maxBytes);
  const maxLineBytes = limit('maxLineBytes', limits.maxLineBytes, Math.min(d.maxLineBytes, lineMax), 1, lineMax);
  const headLines = limit('headLines', limits.headLines, Math.min(d.headLines, maxLines), 0, maxLines);
  return Object.freeze({ maxLines, maxLineBytes, maxBytes, headLines });
}

function limit(name: string, value: unknown, fallback: number, min: number, max: number): number {
  return value === undefined ? fallback : checkInteger(`OutputRing limit ${name}`, value, min, max);
}
