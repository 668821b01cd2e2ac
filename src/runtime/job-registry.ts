/**
 * The runtime's jobs by number: numbers 0, 1, 2, ... never reused; finished jobs kept readable up
 * to a bound (oldest forgotten first, a running job never); a job with a call in flight on it is
 * kept until that call has built its report.
 */
import { InvalidInputError, JobNotFoundError } from '../protocol/errors.js';
import { inputProblem } from '../wording/index.js';
import { hasEnded, type JobRecord } from './job-record.js';

export class JobRegistry {
  private readonly records = new Map<number, JobRecord>();
  /** Jobs with calls in flight on them, which eviction must leave alone for now. */
  private readonly pins = new Map<JobRecord, number>();
  private nextId = 0;

  constructor(
    private readonly keepFinished: number,
    /** Told of every job forgotten, so the supervisor can drop its output too. */
    private readonly onForget: (record: JobRecord) => void,
  ) {}

  /** The next job number (taken: it is never given again). */
  takeId(): number {
    return this.nextId++;
  }

  add(record: JobRecord): void {
    this.records.set(record.id, record);
  }

  get(id: number): JobRecord | undefined {
    return this.records.get(id);
  }

  /** The job numbered `id`; an InvalidInputError for a malformed id, JobNotFoundError for an unknown one. */
  find(id: number): JobRecord {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) {
      throw new InvalidInputError(inputProblem.badJobId(id));
    }
    const record = this.records.get(id);
    if (!record) throw new JobNotFoundError(id, [...this.records.keys()]);
    return record;
  }

  /** Every job, oldest first. */
  all(): JobRecord[] {
    return [...this.records.values()];
  }

  /**
   * Runs `call` with the job kept in the registry: a job that finishes during a call on it (a
   * kill's own job, typically) must not be forgotten before the call has built its report.
   */
  async pinned<T>(record: JobRecord, call: () => Promise<T>): Promise<T> {
    this.pins.set(record, (this.pins.get(record) ?? 0) + 1);
    try {
      return await call();
    } finally {
      const left = (this.pins.get(record) ?? 1) - 1;
      if (left > 0) this.pins.set(record, left);
      else {
        this.pins.delete(record);
        // What eviction had to leave alone meanwhile is due now.
        this.evictFinished();
      }
    }
  }

  /** Keeps the newest `keepFinished` finished jobs; never forgets a running one. */
  evictFinished(): void {
    const finished = this.all().filter((record) => hasEnded(record) && record.cleanedUp && !this.pins.has(record));
    const excess = finished.length - this.keepFinished;
    for (const record of finished.slice(0, Math.max(0, excess))) {
      this.records.delete(record.id);
      this.onForget(record);
    }
  }
}
