/**
 * The shapes of the JobRuntime's public calls: what a host passes in (each option's default in its
 * comment) and what it gets back besides reports.
 */
import type { Limits } from './limits.js';
import type { Notify } from './notify.js';
import type { NotifiedFacts } from '../facts.js';
import type { LimitKind, LimitMechanism, LimitReached } from '../protocol/limits.js';
import type { ResourceSpec } from '../locks/index.js';
import type { Containment, SignalName } from '../protocol/messages.js';

export interface BackgroundInput {
  command: string;
  /** Default: the runtime's cwd. */
  cwd?: string;
  /** Default: the runtime's env. */
  env?: NodeJS.ProcessEnv;
  /** Keep a pipe to the job's stdin. Default: false (stdin is /dev/null). */
  stdin?: boolean;
  /** One interleaved stream for stdout and stderr. Default: false. */
  merge?: boolean;
  /** Run on a pseudo-terminal (120 columns, 40 rows, echo on, TERM=dumb): programs line-buffer and
   * prompt as in a terminal, the output is one stream in the order written, and `input` writes
   * to the terminal (`stdin` and `merge` do not apply). Default: false. */
  tty?: boolean;
  /** Resources the job holds from before it spawns until its cleanup is complete. Default: none. */
  locks?: readonly ResourceSpec[];
  /** The ref (branch/worktree name) the call belongs to, for messages. */
  ref?: string;
  /** Cancels the wait for locks. */
  signal?: AbortSignal;
  /** Milliseconds to wait for locks before giving up. Default: no limit. */
  lockTimeoutMs?: number;
  /** Milliseconds the call waits for the job's locks before it answers with the job still
   * `waiting` (it keeps its place and starts when it can: onJobEvent tells `started`). The time
   * waited counts against `waitMs`. Default: no limit (the call waits until the job starts). */
  answerWithinMs?: number;
  /** Stop the job (as kill does) after this many milliseconds. Default: no limit. */
  timeoutMs?: number;
  /** This job's limits, within the host's (`JobRuntimeOptions.limits`): a call may only tighten them. */
  limits?: Limits;
  /** Instead of the settle window, wait up to this many ms for the job to end or to print a line
   * matching `until` (a dev server's ready line). Default: the settle window; with `until` or
   * `untilPort`, 30 000 (UNTIL_WAIT_MS). */
  waitMs?: number;
  /** A regular expression (or its source) that ends the wait when a new output line matches. It is
   * run by RE2 (linear time): backreferences and lookaround are refused. */
  until?: RegExp | string;
  /** Answer as soon as a process of the job listens on this TCP port (1-65535). */
  untilPort?: number;
  /** Tell (a `notified` job event) of each new line that matches, or when a port listens, while the job runs. */
  notify?: Notify | readonly Notify[];
}

export interface StatusOptions {
  /** How many of the last lines to show. Default: 50. With `since`: the first N lines after it (a
   * page; the report's `output.next` starts the next one). */
  lines?: number;
  /** Lines after this sequence number (a cursor read). */
  since?: number;
  /** A regular expression (or its source): only the kept lines that match, each with its number
   * (`seq`), the newest `lines` (default 50) of them, or with `since` the first `lines` after it;
   * `output.matched` counts them all. Run by RE2 in the supervisor, as `until` is. With `waitMs`,
   * the read after the wait is filtered. */
  filter?: RegExp | string;
  /** Bound on the bytes of output returned, at most `settings.maxReadBytes` (about 15.5 MiB with
   * the default limits: every reply must fit in one frame of the channel). Default: 65536. */
  maxBytes?: number;
  /** Wait up to this many ms for the job to end (or, with `until`, for a new matching line) first.
   * Default: no wait; with `until` or `untilPort`, 30 000 (UNTIL_WAIT_MS). */
  waitMs?: number;
  /** A regular expression (or its source): return as soon as a new line matches. It
   * is run by RE2 (linear time): backreferences and lookaround are refused. */
  until?: RegExp | string;
  /** Return as soon as a process of the job listens on this TCP port (1-65535). */
  untilPort?: number;
}

export interface KillOptions {
  /** Default: TERM (grace, then KILL). */
  signal?: SignalName;
  /** Milliseconds between TERM and KILL. Default: the runtime's killGraceMs. */
  graceMs?: number;
}

/**
 * A job's lifecycle as it happens: it started (its leader runs), the leader ended, it failed to
 * start, it was cancelled before it started (its wait for its locks given up), it was lost, or its
 * cleanup finished.
 */
export interface JobEvent {
  type: 'started' | 'exited' | 'failed' | 'cancelled' | 'lost' | 'cleaned-up' | 'notified';
  job: number;
  /** With `exited`: the limit that stopped the job, when one did (`all-jobs-memory`: allJobsMemoryBytes). */
  limitReached?: LimitReached;
  /**
   * With `notified`: what a notify watch saw. A burst of matches is one event (the first line, its
   * number, the count; `everyLine` when each line read matched), at most one per watch every
   * NOTIFY_FOLD_MS; a port is told once.
   */
  notified?: NotifiedFacts;
}

export interface Capabilities {
  containment: Containment;
  subreaper: boolean;
  supervisorPid: number;
  signals: SignalName[];
  maxJobs: number;
  /** What this environment cannot guarantee, in plain words (empty when nothing is known). */
  limitations: string[];
  /** `maxReadBytes`: the largest `maxBytes` a status may ask for. */
  limits: { outputLines: number; lineBytes: number; outputBytes: number; maxCommandBytes: number; maxReadBytes: number };
  /** Job limits: the host's (every job's defaults and ceilings), and what holds each kind here (null: nothing can). */
  jobLimits: { host: Limits; by: Record<LimitKind, LimitMechanism | null>; allJobsMemoryBytes: number | null };
}
