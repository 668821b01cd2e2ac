/**
 * Telling the model what happened to its jobs between calls (issue 13, item 1): every answer of
 * the tools ends with one line per job that ended (or, after waiting for its locks, started) since
 * the model last heard of it: the job's header, how many of its lines no answer has shown yet, and
 * the call that reads them. A notice carries no output line; the output appears only when asked for.
 *
 * What the model has heard is taken from the answers themselves (their structured reports): a
 * report of a job in a state is hearing of that state, so an answer that reports a job's end (a
 * job_status after it ended, a job_kill, the list) is never followed by a notice of that end. Each
 * event is told once: what has been heard of a job only grows (waiting, started, ended). The
 * runtime's job events say when something may be due, so an answer with nothing new costs nothing.
 */
import type { JobReport } from '../reports/report.js';
import type { Dialect, NotifiedFacts, ReportState } from '../facts.js';
import type { ToolRuntime } from '../runtime/tool-port.js';
import { DEFAULT_TAIL_LINES } from '../runtime/options.js';
import { jobNotice } from '../wording/index.js';
import type { JobNotice, ToolResult } from './result.js';
import { highestLineShown } from './shown-lines.js';

/** A notice's line for a model (`tool`, its `text`) or for a person at the shell (`shell`: `status 2 reads them`). */
export function noticeText(notice: JobNotice, dialect: Dialect = 'tool'): string {
  return jobNotice(notice, dialect);
}

/** What the tracker uses of a runtime (the tools' runtime; `onJobEvent` is optional for hosts' own runtimes). */
export type NoticeRuntime = Pick<ToolRuntime, 'job' | 'status' | 'onJobEvent' | 'totalLines'>;

/** What the model has heard of one job; each flag only ever turns true. */
interface Heard {
  waiting: boolean;
  started: boolean;
  ended: boolean;
  /** The highest line number (seq) an answer showed; -1 for none. */
  shown: number;
}

const ENDED: ReadonlySet<ReportState> = new Set(['exited', 'killed', 'failed', 'cancelled', 'lost']);

export class Notices {
  private readonly jobs = new Map<number, Heard>();
  /** Something may be due: a job event came, or an answer told of a job that has not ended. */
  private due = false;

  /** What notify watches saw that the model has not been told, one entry per job and watch. */
  private readonly notified = new Map<string, { job: number; facts: NotifiedFacts }>();

  constructor(private readonly runtime: NoticeRuntime) {
    runtime.onJobEvent?.((event) => {
      this.due = true;
      if (event.type === 'notified' && event.notified) this.fold(event.job, event.notified);
    });
  }

  /** Folds a watch's event into what is pending for it: the first line stays, the counts add up. */
  private fold(job: number, facts: NotifiedFacts): void {
    if (!this.jobs.has(job)) return; // a job the model never heard of: its host's watch
    const key = `${job} ${facts.port ?? ''} ${facts.pattern ?? ''}`;
    const pending = this.notified.get(key);
    if (!pending) this.notified.set(key, { job, facts: { ...facts } });
    else {
      pending.facts.count += facts.count;
      pending.facts.everyLine = pending.facts.everyLine || facts.everyLine;
    }
  }

  /** Records what `result` told the model: each report's state and the lines it showed. */
  observe(result: ToolResult): void {
    for (const report of [result.job, result.stopped, ...(result.list?.jobs ?? [])]) {
      if (report) this.hear(report);
    }
  }

  /** The notices due now, each told once (consumed). */
  async take(): Promise<JobNotice[]> {
    if (!this.due && this.runtime.onJobEvent !== undefined) return [];
    this.due = false;
    const told: { report: JobReport; event: JobNotice['event']; shown: number }[] = [];
    for (const [id, heard] of this.jobs) {
      // Nothing more is told of a job the model heard end (its watches told all before its end).
      if (heard.ended) {
        this.jobs.delete(id);
        continue;
      }
      const report = this.runtime.job(id);
      if (!report) {
        this.jobs.delete(id); // forgotten by the runtime: nothing can be read of it any more
        continue;
      }
      if (ENDED.has(report.state)) {
        heard.ended = heard.started = true;
        told.push({ report, event: 'ended', shown: heard.shown });
      } else if (heard.waiting && !heard.started && report.state === 'running' && report.pid !== null) {
        // (A job being spawned is reported running without a pid yet: its start is told once it runs.)
        heard.started = true;
        told.push({ report, event: 'started', shown: heard.shown });
      }
    }
    const notices = this.takeNotified();
    // Marked as told above, before any await: a concurrent answer cannot tell the same event.
    const ends = await Promise.all(
      told.map(async ({ report, event, shown }) => {
        const unread = await this.unread(report, shown);
        // A default read shows the newest 50: more unread than that is read on from the last line shown.
        const readFrom = unread !== null && unread > DEFAULT_TAIL_LINES ? shown : null;
        const limits = report.limits?.reached ? { limits: report.limits } : {};
        const facts = { id: report.id, event, state: report.state, header: report.header, unread, readFrom, ...limits };
        return { ...facts, text: jobNotice(facts) };
      }),
    );
    return [...notices, ...ends];
  }

  /** What the watches saw, less a single line an answer already showed; consumed. */
  private takeNotified(): JobNotice[] {
    const notices: JobNotice[] = [];
    for (const { job, facts } of this.notified.values()) {
      const report = this.runtime.job(job);
      const shown = this.jobs.get(job)?.shown ?? -1;
      if (!report || (facts.count === 1 && facts.lineNumber !== undefined && facts.lineNumber <= shown)) continue;
      const notice = { id: job, event: 'notified' as const, state: report.state, header: report.header, unread: null, readFrom: null, notified: facts };
      notices.push({ ...notice, text: jobNotice(notice) });
    }
    this.notified.clear();
    return notices;
  }

  /** `result` with the notices due appended to its text and carried as `notices`. */
  async finish(result: ToolResult): Promise<ToolResult> {
    this.observe(result);
    const notices = await this.take();
    if (notices.length === 0) return result;
    return { ...result, text: `${result.text}\n${notices.map((notice) => notice.text).join('\n')}`, notices };
  }

  private hear(report: JobReport): void {
    let heard = this.jobs.get(report.id);
    if (!heard) {
      heard = { waiting: false, started: false, ended: false, shown: -1 };
      this.jobs.set(report.id, heard);
    }
    if (report.state === 'waiting') heard.waiting = true;
    else if (report.state === 'running') heard.started = true;
    else if (ENDED.has(report.state)) heard.ended = heard.started = true;
    if (!heard.ended) this.due = true;
    heard.shown = Math.max(heard.shown, highestLineShown(report));
  }

  /** Lines after the last one shown; null when the job's output cannot be read. */
  private async unread(report: JobReport, shown: number): Promise<number | null> {
    if (report.state === 'failed' || report.state === 'cancelled' || report.state === 'lost') return null;
    const final = this.runtime.totalLines?.(report.id);
    if (final !== undefined && final !== null) return Math.max(0, final - (shown + 1));
    try {
      const total = (await this.runtime.status(report.id, { lines: 0 })).output?.totalLines;
      return total === undefined ? null : Math.max(0, total - (shown + 1));
    } catch {
      return null; // forgotten, or the runtime closed, meanwhile
    }
  }
}
