/**
 * What one set of tools has shown of each job's output, so that its reads do not repeat (issue 13,
 * item 2). A model has a small context and no memory of earlier turns: the same head lines in
 * every answer, or the same tail read twice, cost it tokens and tell it nothing.
 *
 * - The head lines (the first lines of a job, kept after the ring wrapped) are shown until these
 *   tools have shown them once, in any answer (`background`'s own first answer counts).
 * - `lines: N` (without `since` or `filter`) shows the last N lines and nothing else: no head.
 * - In mode `new` (createTools `reads: 'new'`), a read without `lines`, `since` or `filter` shows
 *   only the lines after the highest line these tools have shown (the newest 50 at most; the report
 *   counts the unseen ones it skipped and names the `since` call that reads them).
 *
 * A filtered read shows chosen lines, not the stream: it neither moves the `new` cursor nor counts
 * as showing the head. Lines in progress (no newline yet) are never counted as shown: they may grow.
 */
import { reportText, type JobReport } from '../reports/report.js';
import { OUTPUT_HEAD_LINES } from '../runtime/options.js';

/** `tail`: the default read is the last 50 lines; `new`: only lines no earlier answer showed. */
export type ReadsMode = 'tail' | 'new';

/** How a job_status read was asked, as far as showing it goes. */
export interface ReadAsked {
  lines?: number | undefined;
  since?: number | undefined;
  filter?: string | undefined;
}

interface Shown {
  /** The highest complete line shown; -1 when none. */
  high: number;
  /** Head lines shown (seq < OUTPUT_HEAD_LINES). */
  head: Set<number>;
}

export class ShownLines {
  private readonly jobs = new Map<number, Shown>();

  constructor(readonly mode: ReadsMode) {}

  /** A read of new lines only: mode `new`, and the model asked for no particular lines. */
  readsNew(asked: ReadAsked): boolean {
    return this.mode === 'new' && asked.lines === undefined && asked.since === undefined && asked.filter === undefined;
  }

  /** `report` as these tools show it (see the file comment), recorded as shown. */
  present(report: JobReport, asked: ReadAsked = {}): JobReport {
    const output = report.output;
    if (!output || report.filter !== undefined) return report;
    const shown = this.of(report.id);
    const onlyLast = asked.lines !== undefined && asked.since === undefined;
    const readsNew = this.readsNew(asked);
    let head = onlyLast ? [] : output.head.filter((line) => !shown.head.has(line.seq));
    let lines = output.lines;
    const after = shown.high;
    if (readsNew) {
      head = head.filter((line) => line.seq > after);
      lines = lines.filter((line) => line.partial || line.seq > after);
    }
    for (const line of head) if (!line.partial && line.seq < OUTPUT_HEAD_LINES) shown.head.add(line.seq);
    const unchanged = !readsNew && head.length === output.head.length;
    const shownReport: JobReport = unchanged ? report : { ...report, output: { ...output, head, lines }, ...(readsNew ? { unseenAfter: after } : {}) };
    shown.high = Math.max(shown.high, highestLineShown(shownReport));
    if (unchanged) return report;
    shownReport.text = reportText(shownReport);
    return shownReport;
  }

  private of(id: number): Shown {
    let shown = this.jobs.get(id);
    if (!shown) {
      shown = { high: -1, head: new Set() };
      this.jobs.set(id, shown);
    }
    return shown;
  }
}

/**
 * The highest complete line a report showed: its lines' numbers, and for a cursor read its `next`
 * (it read up to there, even when nothing was new). A tail read's `next` is not used: `lines: 0`
 * shows nothing. A filtered read shows chosen lines, not the stream: it moves nothing. Lines in
 * progress are not counted: they may grow. -1 when it showed none. (The reads here and the notices
 * both count what the model has seen by it.)
 */
export function highestLineShown(report: JobReport): number {
  const output = report.output;
  if (!output || report.filter !== undefined) return -1;
  let last = report.since !== null ? output.next : -1;
  for (const line of [...output.head, ...output.lines]) if (line.partial === undefined && line.seq > last) last = line.seq;
  return last;
}
