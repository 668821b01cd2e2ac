/**
 * The shape of a job's output as the supervisor's ring produces it and the channel carries it:
 * one definition for both sides.
 */

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
