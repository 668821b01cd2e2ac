/**
 * A job's report with a read of its output, after an optional wait. The supervisor answers the
 * wait and the read in one round trip (it sees the output first); only a job it does not run yet
 * (still waiting for its locks, or being spawned) is waited for here first.
 */
import { HephError } from '../protocol/errors.js';
import type { OutputRead, ReadReply, ReadWait } from '../protocol/messages.js';
import type { PatternSpec } from '../protocol/pattern.js';
import { buildReport, type JobReport } from '../reports/report.js';
import type { KillOutcome, WaitOutcome } from '../facts.js';
import type { Changes } from './changes.js';
import { hasEnded, type JobRecord } from './job-record.js';
import type { JobStates } from './job-states.js';
import { DEFAULT_MAX_BYTES, DEFAULT_TAIL_LINES } from './options.js';
import type { SupervisorClient } from './supervisor-client.js';

/** Which lines a read returns: the last `tail`, or those after `since` (at most `limit`), within
 * `maxBytes`; with `filter`, only the lines that match. */
export interface OutputReadRequest {
  tail: number;
  since: number | undefined;
  maxBytes: number;
  limit?: number | undefined;
  filter?: PatternSpec | undefined;
}

/** A wait before the read: up to `ms`, for the job's end or (with `until`) a new matching line
 * after `from` (absent: from now on; -1: from the first line). */
export interface WaitRequest {
  ms: number;
  until: PatternSpec | undefined;
  from: number | undefined;
  /** Also answer once a process of the job listens on this TCP port. */
  port?: number | undefined;
}

/** The read a report of a job's own call shows: the default tail. */
export const TAIL_READ: OutputReadRequest = { tail: DEFAULT_TAIL_LINES, since: undefined, maxBytes: DEFAULT_MAX_BYTES };

export interface OutputReadsContext {
  /** The live supervisor that runs the job, or null (not spawned yet, or its supervisor died). */
  supervisorOf(record: JobRecord): SupervisorClient | null;
  changes: Changes;
  states: JobStates;
  maxJobs: number;
}

export class OutputReads {
  constructor(private readonly context: OutputReadsContext) {}

  async report(record: JobRecord, read: OutputReadRequest, wait?: WaitRequest, kill?: KillOutcome, input?: JobReport['input']): Promise<JobReport> {
    const started = Date.now();
    const outcome = (kind: WaitOutcome['kind'], line?: string): WaitOutcome => ({
      kind,
      waitedMs: Date.now() - started,
      ...(line === undefined ? {} : { line }),
      ...(wait?.until ? { pattern: wait.until.source } : {}),
      ...(wait?.port === undefined ? {} : { port: wait.port }),
    });
    let waited: WaitOutcome | undefined;
    let remoteWait: ReadWait | undefined;
    if (wait) {
      // Without a pattern a job not yet running is waited for here until it runs (or ends); with
      // one, only output can match, and a job not in the supervisor has none. So with a port.
      const watches = wait.until !== undefined || wait.port !== undefined;
      if (!watches && (record.state === 'waiting' || record.state === 'starting')) {
        await this.context.changes.until(() => record.state !== 'waiting' && record.state !== 'starting', wait.ms);
      }
      const left = Math.max(0, wait.ms - (Date.now() - started));
      if (!this.context.supervisorOf(record) || record.state === 'failed' || (!watches && record.state === 'waiting')) {
        waited = outcome(hasEnded(record) ? 'ended' : 'timed-out');
      } else {
        remoteWait = {
          ms: left,
          ...(wait.until ? { until: wait.until } : {}),
          ...(wait.from === undefined ? {} : { from: wait.from }),
          ...(wait.port === undefined ? {} : { port: wait.port }),
        };
      }
    }
    const reply = await this.read(record, read, remoteWait);
    if (remoteWait) {
      waited = reply?.waited ? outcome(reply.waited.kind, reply.waited.line) : outcome(hasEnded(record) ? 'ended' : 'timed-out');
    }
    return this.reportOf(record, reply?.output ?? null, read, { ...(waited ? { waited } : {}), ...(kill ? { kill } : {}), ...(input ? { input } : {}) });
  }

  /** The report of `record` with `output`, read as `read` asked (null: none could be read). */
  reportOf(record: JobRecord, output: OutputRead | null, read: OutputReadRequest, outcomes: { waited?: WaitOutcome; kill?: KillOutcome; input?: JobReport['input'] }): JobReport {
    return buildReport(record, output, {
      maxJobs: this.context.maxJobs,
      ...(read.since === undefined ? {} : { since: read.since }),
      ...(read.filter === undefined ? {} : { filter: read.filter.source }),
      ...outcomes,
    });
  }

  /** One read request (with its wait); null when no live supervisor has the job any more. */
  private async read(record: JobRecord, read: OutputReadRequest, wait: ReadWait | undefined): Promise<ReadReply | null> {
    const supervisor = this.context.supervisorOf(record);
    if (!supervisor || record.state === 'failed') return null;
    try {
      const reply = await supervisor.request('read', {
        params: {
          job: record.id,
          tail: read.tail,
          ...(read.since === undefined ? {} : { since: read.since }),
          maxBytes: read.maxBytes,
          ...(read.since === undefined || read.limit === undefined ? {} : { limit: read.limit }),
          ...(read.filter === undefined ? {} : { filter: read.filter }),
          ...(wait ? { wait } : {}),
        },
      });
      this.context.states.apply(record, reply.facts);
      return reply;
    } catch (error) {
      if (error instanceof HephError && (error.code === 'ERR_SUPERVISOR_LOST' || error.code === 'ERR_JOB_NOT_FOUND')) return null;
      throw error;
    }
  }
}
