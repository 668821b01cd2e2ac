/**
 * Notify watches: each line of a job tested, as it is ingested (so no bound of the ring can drop
 * it first), against a model's pattern (RE2, linear time), and the job's listening ports looked
 * for, until the job's last output is read. A match is told at once; those that follow within
 * NOTIFY_FOLD_MS go as one event with a count: one event per window at most, nothing queued.
 */
import { InvalidInputError } from '../../src/protocol/errors.js';
import type { NotifyWatch, SupervisorEvent } from '../../src/protocol/messages.js';
import { MAX_NOTIFY_WATCHES, NOTIFY_FOLD_MS, NOTIFY_LINE_CHARS } from '../../src/protocol/notify.js';
import type { OutputLine } from '../../src/protocol/output.js';
import { compilePattern, PORT_POLL_MS, type WaitableJob } from '../requests/read-wait.js';

type Notified = Extract<SupervisorEvent, { event: 'notified' }>;

/** What a watch needs of a job beyond a wait's: each line as it is ingested. */
export interface WatchableJob extends WaitableJob {
  onLine(tap: (line: OutputLine) => void): () => void;
}

/** The matches not told yet: the first one, how many, out of how many lines since it. */
interface Burst {
  seq: number;
  line: string;
  count: number;
  scanned: number;
}

/** The watches of every job; each stops once its job is drained. */
export class NotifyWatches {
  private readonly byJob = new Map<number, number>();

  constructor(private readonly send: (event: Notified) => void) {}

  /**
   * Starts `watch` on `job`, from the line after `watch.from` (absent: from the next line). Refused
   * (InvalidInputError) past MAX_NOTIFY_WATCHES, or once the job has ended unless `atSpawn`.
   */
  add(job: WatchableJob, watch: NotifyWatch, atSpawn = false): void {
    if (job.ended && !atSpawn) throw new InvalidInputError(`job ${job.id} has ended: there is nothing left to watch`);
    const count = this.byJob.get(job.id) ?? 0;
    if (count >= MAX_NOTIFY_WATCHES) throw new InvalidInputError(`job ${job.id} has ${count} notify watches, the most a job may have`);
    if (watch.until === undefined && watch.port === undefined) throw new InvalidInputError('a notify watch needs a pattern, a port or both');
    const pattern = watch.until ? compilePattern(watch.until, 'notify') : null;
    this.byJob.set(job.id, count + 1);
    const stop = this.run(job, watch, pattern);
    const finish = () => {
      stopOnDrain();
      stop();
      const left = (this.byJob.get(job.id) ?? 1) - 1;
      if (left === 0) this.byJob.delete(job.id);
      else this.byJob.set(job.id, left);
    };
    const stopOnDrain = job.onChange(() => {
      if (job.drained) finish();
    });
    // A job that drained before its spawn was answered sends no more changes.
    if (job.drained) finish();
  }

  /** Runs one watch; the returned function tells what is pending and stops it. */
  private run(job: WatchableJob, watch: NotifyWatch, pattern: { test(text: string): boolean } | null): () => void {
    const tell = (fields: Omit<Notified, 'event' | 'job' | 'watch'>) => this.send({ event: 'notified', job: job.id, watch: watch.watch, ...fields });
    let burst: Burst | null = null;
    let toldAt = -Infinity;
    let flushTimer: NodeJS.Timeout | null = null;
    const flush = () => {
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = null;
      if (!burst) return;
      tell({ seq: burst.seq, line: burst.line, count: burst.count, scanned: burst.scanned });
      burst = null;
      toldAt = Date.now();
    };
    const see = (line: OutputLine) => {
      const matched = pattern!.test(line.text);
      if (matched) burst ??= { seq: line.seq, line: line.text.slice(0, NOTIFY_LINE_CHARS), count: 0, scanned: 0 };
      if (!burst) return;
      burst.scanned++;
      if (!matched) return;
      burst.count++;
      const wait = toldAt + NOTIFY_FOLD_MS - Date.now();
      if (wait <= 0) flush();
      else flushTimer ??= setTimeout(flush, wait);
    };
    const stops: (() => void)[] = [];
    if (pattern) {
      // The lines already in (a watch started with its job: those since the spawn), then each new one.
      const from = watch.from ?? job.lineCount - 1;
      if (from < job.lineCount - 1) for (const line of job.readLines(from).lines) if (!line.partial) see(line);
      stops.push(job.onLine(see));
    }
    if (watch.port !== undefined) {
      const listens = job.portCheck(watch.port);
      const poll = setInterval(() => {
        if (!listens()) return;
        clearInterval(poll);
        tell({ count: 1, scanned: 0, listening: true });
      }, PORT_POLL_MS);
      stops.push(() => clearInterval(poll));
    }
    return () => {
      for (const stop of stops) stop();
      flush();
    };
  }
}
