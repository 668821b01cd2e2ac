/**
 * A job's limits as the wire carries them, and what the supervisor says of them. CPU is in
 * thousandths of a core (1500: one and a half cores), so every field is an integer.
 */

export interface JobLimits {
  /** All the job's processes together; over it the job is stopped whole. */
  memoryBytes: number | null;
  /** Processes at once; a fork past it fails inside the job (watchdog: the job is stopped). */
  processes: number | null;
  /** CPU time per wall time, in thousandths of a core; over it the job is slowed, not killed. */
  cpuMillis: number | null;
}

/** How a limit is held: the job's cgroup v2 controllers, groups in cgroup v1 hierarchies, or the supervisor's watchdog. */
export type LimitMechanism = 'cgroup-v2' | 'cgroup-v1' | 'watchdog';

export type LimitKind = 'memory' | 'processes' | 'cpu';

/** A limit that stops a job: its own memory or process limit, or the memory limit of all jobs together. */
export type LimitReached = 'memory' | 'processes' | 'all-jobs-memory';

export interface LimitFacts {
  set: JobLimits;
  /** The mechanism of each limit set; null for a limit not set, or one nothing here can hold (cpu without a controller). */
  by: Record<LimitKind, LimitMechanism | null>;
  /** The limit that stopped the job, once it did (`all-jobs-memory`: the runtime's, for all jobs together). */
  reached: LimitReached | null;
  /** With `all-jobs-memory`: that limit, and what all jobs used together when this one was stopped. */
  allJobs?: { limitBytes: number; totalBytes: number };
  /** The most memory the job was seen to use (a controller's own peak; the watchdog's samples). */
  peakMemoryBytes: number | null;
  /** Forks refused at the process limit (a controller counts them; the watchdog cannot). */
  forkFailures: number | null;
  /** Time the job was held back at its CPU limit, in ms. */
  throttledMs: number | null;
  /** cgroup v2: times it went past memory.high (a little below its memory limit) and was slowed. */
  slowedAtMemoryHigh?: number | null;
  /** cgroup v2: share of the last 10 s some of its tasks stalled on memory, in %. */
  memoryPressure?: number | null;
}

export const NO_LIMITS: JobLimits = { memoryBytes: null, processes: null, cpuMillis: null };

export function hasLimits(limits: JobLimits | undefined): limits is JobLimits {
  return limits !== undefined && (limits.memoryBytes !== null || limits.processes !== null || limits.cpuMillis !== null);
}
