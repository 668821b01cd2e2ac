/**
 * How a job's record changes as facts arrive: the leader's exit, the end of its cleanup (the only
 * moment its resources are released, SPEC 6), a failed start, the loss of its supervisor. Every
 * change is told to the host's listeners (as a JobEvent) and to whoever waits on `changes`.
 */
import { SupervisorLostError } from '../protocol/errors.js';
import { diedWhileStartingReason, supervisorDiedReason } from '../wording/index.js';
import type { JobFacts } from '../protocol/messages.js';
import type { JobEvent } from './api.js';
import type { NotifiedFacts } from '../facts.js';
import type { Changes } from './changes.js';
import { isRunning, type JobRecord } from './job-record.js';
import { MACHINE_LIMITS } from '../wording/index.js';

/** The machine limit an error names (its own errno code, or a spawn error's), if it names one. */
function machineLimitOf(error: unknown): string | undefined {
  const coded = error as { code?: unknown; details?: { code?: unknown } } | null;
  for (const code of [coded?.code, coded?.details?.code]) {
    if (typeof code === 'string' && Object.prototype.hasOwnProperty.call(MACHINE_LIMITS, code)) return code;
  }
  return undefined;
}

export class JobStates {
  private readonly listeners = new Set<(event: JobEvent) => void>();

  constructor(private readonly changes: Changes) {}

  /** Calls `listener` on every job event; returns the function that stops it. */
  listen(listener: (event: JobEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Its leader runs (the spawn was answered): told once, for every job. */
  started(record: JobRecord): void {
    if (record.state !== 'starting') return;
    record.state = 'running';
    this.emit({ type: 'started', job: record.id });
  }

  /** The leader ended (the job's state follows it); told once. */
  exited(record: JobRecord, code: number | null, signal: string | null, at: number): void {
    if (record.endedAt !== null) return;
    record.state = signal ? 'killed' : 'exited';
    record.exitCode = code;
    record.signal = signal;
    record.endedAt = at;
    const limitReached = record.limits?.reached;
    this.emit({ type: 'exited', job: record.id, ...(limitReached ? { limitReached } : {}) });
  }

  /** Every process of the job is gone: only now are its resources released (SPEC 6). */
  cleanedUp(record: JobRecord): void {
    if (record.cleanedUp) return;
    record.cleanedUp = true;
    if (record.timeoutTimer) clearTimeout(record.timeoutTimer);
    record.timeoutTimer = null;
    record.lease?.release();
    this.emit({ type: 'cleaned-up', job: record.id });
  }

  /** What the supervisor says of the job now (with a reply to a read, a kill, a write). */
  apply(record: JobRecord, facts: JobFacts): void {
    record.stats = facts.stats ?? null;
    if (facts.limits) record.limits = facts.limits;
    if (facts.exit) this.exited(record, facts.exit.code, facts.exit.signal, facts.exit.at);
    if (facts.cleanedUp) this.cleanedUp(record);
    this.changes.notify();
  }

  /** A call that did not produce a running job: says why, and holds nothing afterwards. */
  failed(record: JobRecord, error: unknown): void {
    if (error instanceof SupervisorLostError) {
      record.state = 'lost';
      record.reason = diedWhileStartingReason(error.message);
    } else {
      record.state = 'failed';
      record.reason = error instanceof Error ? error.message : String(error);
      const limit = machineLimitOf(error);
      if (limit !== undefined) record.limit = limit;
      if ((error as { code?: unknown } | null)?.code === 'ERR_BAD_RESOURCE') record.badLocks = true;
    }
    this.neverRan(record);
    this.emit({ type: record.state === 'lost' ? 'lost' : 'failed', job: record.id });
  }

  /**
   * Its wait for its locks was given up (a kill, the caller's signal, its lock timeout) before it
   * started: nothing of it ran, which is not a failure of its command. `reason` says who gave up.
   */
  cancelled(record: JobRecord, reason: string): void {
    record.state = 'cancelled';
    record.reason = reason;
    this.neverRan(record);
    this.emit({ type: 'cancelled', job: record.id });
  }

  /** A job that ends without having run: nothing to clean up, nothing held. */
  private neverRan(record: JobRecord): void {
    record.abort = null;
    record.blockedBy = undefined;
    record.endedAt = Date.now();
    record.cleanedUp = true;
    record.lease?.release();
    this.changes.notify();
  }

  /** Its supervisor died while it ran: the job is lost (what is left of it is stopped elsewhere). */
  lost(record: JobRecord, error: SupervisorLostError, at: number): void {
    if (!isRunning(record)) return;
    record.state = 'lost';
    record.reason = supervisorDiedReason(error.message);
    record.endedAt = at;
    this.emit({ type: 'lost', job: record.id });
  }

  /** A notify watch of a running job saw something. */
  notified(record: JobRecord, notified: NotifiedFacts): void {
    this.emit({ type: 'notified', job: record.id, notified });
  }

  private emit(event: JobEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A host's listener must not break the runtime.
      }
    }
  }
}
