/**
 * The shape of a job's output as the supervisor's ring produces it and the channel carries it:
 * one definition for both sides, with the defaults both sides use.
 */

/** SPEC 5: each job keeps its last 2000 lines. */
export const OUTPUT_MAX_LINES = 2000;
/** SPEC 5: a line is cut after 8 KiB (the rest is counted as cut). */
export const OUTPUT_MAX_LINE_BYTES = 8192;
/** Raw bytes each job's ring keeps besides the line bound, so 2000 long lines cannot cost 16 MiB. */
export const OUTPUT_MAX_BYTES = 4 * 1024 * 1024;
/** Lines from a job's start kept even after the ring wraps (the first fatal error is often early). */
export const OUTPUT_HEAD_LINES = 20;
/** SPEC 5: a read shows the last 50 lines unless asked for more. */
export const READ_TAIL_LINES = 50;
/** Bound on the rendered output one read returns (the peer system's default). */
export const READ_MAX_BYTES = 64 * 1024;

export type StreamName = 'stdout' | 'stderr';

export interface OutputLine {
  /** One counter per job across both streams, in the order the supervisor read the lines. */
  seq: number;
  stream: StreamName;
  text: string;
  /** Raw bytes of the line beyond `maxLineBytes` that were not kept. */
  cutBytes: number;
  /** The line has no newline yet; `seq` is the one it is expected to get. */
  partial?: true;
  /** Rendered bytes of this line left out because the read reached its `maxBytes`. */
  clippedBytes?: number;
}

export interface OutputRead {
  /** Oldest first; pending partial lines come last, when the read reaches the end. */
  lines: OutputLine[];
  /** Head lines (seq < headLines) after `since` and before the first line in `lines`, as the byte budget allows. */
  head: OutputLine[];
  /** Completed lines that exist (or existed) before the first line returned. */
  earlier: number;
  /** Tail read: lines that fell off the ring. Since read: lines after `since` that fell off. */
  dropped: number;
  /** The `since` for the next read: the last complete line returned (partial lines do not count). */
  next: number;
  totalLines: number;
  truncatedLines: number;
  /** The read was cut by `maxBytes`. */
  limitedByBytes: boolean;
  /** A filtered read: how many kept lines after `since` match (`lines` shows some of them, `dropped` were not kept to search). */
  matched?: number;
}
