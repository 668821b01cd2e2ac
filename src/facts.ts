/**
 * The facts words are made from: what the runtime, the reports and the tools decide, in the shapes
 * src/wording/ says them in. Types only, importing nothing but the protocol, so every layer can
 * name them without an import circle (wording never reaches back into what it describes).
 */
import type { JobStats } from './protocol/stats.js';
import type { LimitFacts } from './protocol/limits.js';

// ---- jobs ----------------------------------------------------------------------------------

/** `waiting` for its locks; `running`; `exited` with a code; `killed` by a signal; `failed` to
 * start; `cancelled` while it waited for its locks (it never started); `lost` with its supervisor.
 * (`starting` is internal: shown as running.) */
export type JobState = 'waiting' | 'starting' | 'running' | 'exited' | 'killed' | 'failed' | 'cancelled' | 'lost';

/** A job's state as reports show it (`starting` reads as running). */
export type ReportState = Exclude<JobState, 'starting'>;

/**
 * What a kill found, when it did not simply stop a running job: `ended`, the job had already ended
 * before the call (`leftovers`: its shell had, and the call stopped what it left running); or
 * `outlived-int`, the job still runs `graceMs` after SIGINT, and the next kill would send SIGTERM,
 * then SIGKILL after `nextGraceMs`.
 */
export type KillOutcome = { kind: 'ended'; leftovers: boolean } | { kind: 'outlived-int'; graceMs: number; nextGraceMs: number };

/** How a wait before a read ended, as the report says it. */
export type WaitOutcome = {
  kind: 'ended' | 'matched' | 'timed-out' | 'listening';
  waitedMs: number;
  line?: string;
  pattern?: string;
  port?: number;
  /** The wait asked for was cut to `capMs` (a tool call's `maxWaitMs`), and ran out. */
  cut?: { askedMs: number; capMs: number };
};

/**
 * What a report reads of a job: the runtime's record of it (src/runtime/job-record.ts) is one.
 * Named here so the reports need nothing of the runtime but these facts.
 */
export interface JobView {
  readonly id: number;
  readonly command: string;
  readonly state: JobState;
  readonly pid: number | null;
  readonly exitCode: number | null;
  /** Name of the signal that ended the leader (`SIGTERM`), when killed. */
  readonly signal: string | null;
  readonly startedAt: number;
  readonly endedAt: number | null;
  readonly cleanedUp: boolean;
  readonly reason: string | null;
  /** A failed job refused by a limit of the machine: its errno code (wording MACHINE_LIMITS). */
  readonly limit?: string;
  /** A failed job whose locks were refused as asked (too many lock files for one lease). */
  readonly badLocks?: boolean;
  /** Resources at the last read, while running. */
  readonly stats: JobStats | null;
  /** The resources asked for, while waiting. */
  readonly wants: readonly LockResourceFacts[];
  /** While it waits for its locks: what stands in its way now. */
  readonly blockedBy?: () => LockBlockerFacts[];
  readonly timedOut: boolean;
  readonly limits: LimitFacts | null;
  readonly input: { readonly timeoutMs: number | undefined };
}

// ---- reports -------------------------------------------------------------------------------

/** What a tail read says about the `earlier` lines before those shown (`dropped` of them no longer kept). */
export interface EarlierLines {
  id: number;
  earlier: number;
  dropped: number;
  /** Lines this read shows. */
  shown: number;
  /** The read stopped at its byte bound: asking for more lines would not show more. */
  filledRead: boolean;
}

/** What a filtered read found and shows. */
export interface FilterFacts {
  id: number;
  pattern: string;
  /** Kept lines (after `since`) that match. */
  matched: number;
  shown: number;
  /** Lines (after `since`) no longer kept, so not searched. */
  dropped: number;
  /** A page after `since` (the first matches; a read-on line follows) rather than the newest. */
  page: boolean;
  /** The read stopped at its byte bound. */
  filledRead: boolean;
}

/** The facts of a job that its report's last line depends on. */
export interface NextStepFacts {
  id: number;
  state: ReportState;
  /** The resources a waiting job waits for. */
  wants: readonly LockResourceFacts[];
  reason: string | null;
  cleanedUp: boolean;
  /** A failed job's machine limit (MACHINE_LIMITS), when one refused it. */
  limit?: string;
  /** A failed job's locks were refused as asked. */
  badLocks?: boolean;
}

/**
 * What a notify watch saw since it was last told: lines matching `pattern` (`count` of them, the
 * first `line` at `lineNumber`; `everyLine`: each line read matched), or a listener on `port`.
 */
export interface NotifiedFacts {
  pattern?: string;
  port?: number;
  line?: string;
  lineNumber?: number;
  count: number;
  everyLine: boolean;
}

/** The facts of a notice: a job the model had not heard of ended, started after waiting for its locks, or was seen by a notify watch. */
export interface JobNoticeFacts {
  id: number;
  /** `ended`: it exited, was killed, failed, was cancelled or lost; `started`: it runs after waiting for its locks; `notified`: a notify watch saw something. */
  event: 'ended' | 'started' | 'notified';
  /** With `notified`: what was seen. */
  notified?: NotifiedFacts;
  state: ReportState;
  /** The job's report header when told. */
  header: string;
  /** Lines of its output after the last line any answer showed; null when its output cannot be read (it never ran, or it is gone). */
  unread: number | null;
  /** More unread lines than a default read shows: the `since` that reads them all (the last line shown); else null. */
  readFrom: number | null;
  /** The limit that stopped it, when one did. */
  limits?: LimitFacts | null;
}

// ---- words -----------------------------------------------------------------------------------

/**
 * Whom a hint is written for: a model calls tools (`job_status {"id": 0}`); a person at the
 * heph-jobs shell types its commands (`status 0`). Only the calls a hint names differ.
 */
export type Dialect = 'tool' | 'shell';

/** A JSON schema as the tools' inputs are written in (the subset they use). */
export interface JsonSchema {
  type?: 'object' | 'string' | 'integer' | 'number' | 'boolean' | 'array';
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  additionalProperties?: boolean;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  /** Greater than this, not equal. */
  exclusiveMinimum?: number;
  maximum?: number;
  /** One of these values exactly (strings). */
  enum?: readonly string[];
  examples?: readonly unknown[];
}

// ---- locks -----------------------------------------------------------------------------------

/** A lock owner as a message sees it: its label, then its other plain fields. */
export interface LockOwnerFacts {
  readonly label: string;
  readonly [key: string]: unknown;
}

/** One resource of a lock request as a message sees it. */
export interface LockResourceFacts {
  readonly resource: string;
  readonly mode: 'exclusive' | 'shared';
}

/** A lock request as a message sees it. */
export interface LockRequestFacts {
  readonly owner: LockOwnerFacts;
  readonly resources: readonly LockResourceFacts[];
}

/** Something in a request's way: it holds `resource` (or waits for it, having arrived earlier). */
export interface LockBlockerFacts {
  readonly owner: LockOwnerFacts;
  readonly holding: boolean;
  readonly resource: LockResourceFacts;
  /** The blocked request's resource that conflicts with `resource`. */
  readonly wants: LockResourceFacts;
}
