/**
 * What the runtime remembers of each job: the command as the model gave it, and the lifecycle as
 * the supervisor reports it.
 */
import { hasLimits, type JobLimits, type LimitFacts } from '../protocol/limits.js';
import { JobLimitError } from '../protocol/errors.js';
import type { Lease, NormalizedResource } from '../locks/index.js';
import type { ContainmentMode } from '../protocol/messages.js';
import type { JobStats } from '../protocol/stats.js';
import type { JobState, JobView, LockBlockerFacts } from '../facts.js';
import type { SupervisorClient } from './supervisor-client.js';
import type { NotifySpec } from './notify.js';


/** What the runtime keeps of a job; a report reads it as a JobView. */
export interface JobRecord extends JobView {
  id: number;
  command: string;
  cwd: string;
  state: JobState;
  pid: number | null;
  /** The leader's start time (with the pid, names it for good), from the spawn reply. */
  pidStart: string | null;
  cgroup: string | null;
  exitCode: number | null;
  /** Name of the signal that ended the leader ("SIGTERM"), when killed. */
  signal: string | null;
  startedAt: number;
  endedAt: number | null;
  /** Every process of the job is gone and reaped, its cgroup removed. */
  cleanedUp: boolean;
  /** Why it failed or was lost. */
  reason: string | null;
  /** The errno code of the machine's limit that refused it (`EAGAIN`, `EMFILE`: wording MACHINE_LIMITS), when one did. */
  limit?: string;
  /** Its locks were refused as asked (too many lock files for one lease): they are to change, not the command. */
  badLocks?: boolean;
  /**
   * The supervisor that owns it, for its reads and for cleanup after that supervisor dies. The
   * client object, not its pid: a later supervisor can get a dead one's pid.
   */
  supervisor: SupervisorClient | null;
  containment: ContainmentMode | null;
  /** Resources the job holds (or waits for), released only after its cleanup. */
  lease: Lease | null;
  /** The resources asked for, while waiting. */
  wants: readonly NormalizedResource[];
  /** Cancels the wait for locks. */
  abort: AbortController | null;
  /** While it waits for its locks: what stands in its way now (the lock table's holders and earlier waiters). */
  blockedBy?: () => LockBlockerFacts[];
  /** What started it, for job_restart. */
  input: RestartableInput;
  /** Resources at the last read, while running. */
  stats: JobStats | null;
  /** The per-job timeout fired and stopped it. */
  timedOut: boolean;
  /** Its limits and what they did, as the supervisor last said (the limits asked for, before it starts); null: none. */
  limits: LimitFacts | null;
  timeoutTimer: NodeJS.Timeout | null;
  /** Its output's lines in all, once its last output is read (told with its cleanup); else null. */
  totalLines: number | null;
  /** Its notify watches, numbered by their index (the number the supervisor's events carry). */
  watches: NotifySpec[];
}

/** The options a job was started with, kept so it can be started again the same way. */
export interface RestartableInput {
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv | undefined;
  stdin: boolean;
  merge: boolean;
  tty: boolean;
  locks: readonly NormalizedResource[];
  ref: string | undefined;
  timeoutMs: number | undefined;
  /** The limits it runs under (the host's and the call's combined). */
  limits: JobLimits;
  /** The notify watches it was started with. */
  notify: readonly NotifySpec[];
}

/** Started and not yet ended: counts toward the cap (`starting` is shown as running). */
export function isRunning(record: JobRecord): boolean {
  return record.state === 'starting' || record.state === 'running';
}

/** Its state is final: exited, killed, failed, cancelled or lost (no longer waiting, starting or running). */
export function hasEnded(record: JobRecord): boolean {
  return record.state !== 'waiting' && !isRunning(record);
}

/**
 * The cap (SPEC 4), in one place: a JobLimitError when `running` (the jobs that count toward it)
 * already fill it; null while another job may start. The runtime enforces it; the tools ask it
 * first so a user is not asked to approve a start that cannot happen.
 */
export function capacityError(running: readonly { id: number; command: string }[], maxJobs: number): JobLimitError | null {
  return running.length >= maxJobs ? new JobLimitError(maxJobs, running) : null;
}

/** A job as the runtime first records it: `waiting` for its locks when it asked for any, else `starting`. */
export function newJobRecord(id: number, input: RestartableInput): JobRecord {
  return {
    id,
    command: input.command,
    cwd: input.cwd,
    state: input.locks.length > 0 ? 'waiting' : 'starting',
    pid: null,
    pidStart: null,
    cgroup: null,
    exitCode: null,
    signal: null,
    startedAt: Date.now(),
    endedAt: null,
    cleanedUp: false,
    reason: null,
    supervisor: null,
    containment: null,
    lease: null,
    wants: input.locks,
    abort: null,
    input,
    timedOut: false,
    limits: hasLimits(input.limits) ? { set: input.limits, by: { memory: null, processes: null, cpu: null }, reached: null, peakMemoryBytes: null, forkFailures: null, throttledMs: null } : null,
    timeoutTimer: null,
    totalLines: null,
    watches: [...input.notify],
    stats: null,
  };
}
