/**
 * How the supervisor finds and stops every process of a job: the interface both containment
 * strategies implement (cgroup.ts, process-group.ts), and what they know about a job.
 */
import type { Containment } from '../../src/protocol/messages.js';
import type { KeptFiles, KeptMemberFiles } from '../platform/kept-files.js';

/** What a strategy needs to know about one job. */
export interface JobIdentity {
  job: number;
  pid: number;
  /** `HEPH_JOB=<supervisor pid>-<its start time>:<job>` in every job process's environment. */
  marker: string;
  cgroup: string | null;
  /** Set once the reaper has reaped the leader: from then on its pid may name another process. */
  leaderReaped?: boolean;
  /** A pidfd on the leader while we hold one: signals through it can never reach another process. */
  pidfd?: number;
  /** The job cgroup's files that every status reads, kept open until cleanup (cgroup mode). */
  files?: KeptFiles;
  /** The members' /proc files that every status reads (statm, stat), kept open while they live. */
  memberFiles?: KeptMemberFiles;
}

export interface ContainmentStrategy {
  readonly info: Containment;
  /** Makes the job's cgroup (or nothing) before the spawn. */
  prepare(job: number): string | null;
  /** Once a spawn is answered: makes ahead what prepare would make for the job expected next. */
  prepareNext(): void;
  /** Live processes of the job (pids), leader included while it lives. */
  members(job: JobIdentity): number[];
  /** Sends `signal` to every live process of the job. */
  signalAll(job: JobIdentity, signal: number): void;
  /** SIGKILLs every process of the job. */
  killAll(job: JobIdentity): void;
  /**
   * At the session's end: SIGKILLs every process of every job in one step where the strategy can
   * (cgroup: one write to the subtree's cgroup.kill); false where it cannot, and each job's
   * killAll must do it.
   */
  killEveryJob(): boolean;
  /**
   * A descriptor whose write of "1" kills every job at once (the subtree's cgroup.kill), kept
   * open for the life of the process, so the parent-death signal's handler can write it before
   * any JavaScript runs; null where the strategy has none.
   */
  readonly everyJobKillFd: number | null;
  /** True when no live process of the job remains. */
  isEmpty(job: JobIdentity): boolean;
  /** Calls back when the job may have become empty (a hint; callers re-check with isEmpty). */
  watch(job: JobIdentity, onChange: () => void): () => void;
  /** Removes what prepare made. False while still busy. */
  release(job: JobIdentity): boolean;
  /** Removes the strategy's own footprint (the subtree) at exit. */
  dispose(): void;
}
