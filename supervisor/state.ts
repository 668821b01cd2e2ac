/**
 * What the supervisor holds: its jobs, and what `hello` set up (the config, the containment
 * strategy, the kernel locks). Nothing job-related exists before hello.
 */
import { JobNotFoundError, ProtocolError } from '../src/protocol/errors.js';
import type { SupervisorConfig } from '../src/protocol/messages.js';
import type { CleanupScope } from './cleanup/lost-cleanup.js';
import type { ContainmentStrategy } from './containment/index.js';
import { BaseEnvironment } from './jobs/environment.js';
import type { SupervisedJob } from './jobs/job.js';
import type { KernelLocks } from './locks/kernel-locks.js';

export interface Setup {
  readonly config: SupervisorConfig;
  readonly strategy: ContainmentStrategy;
  /** Where a dead instance's cgroup subtree is looked for. */
  readonly scope: CleanupScope;
  readonly locks: KernelLocks;
}

export class SupervisorState {
  readonly jobs = new Map<number, SupervisedJob>();
  /** The environment spawns refer to (request `environment`). */
  readonly environment = new BaseEnvironment();
  /** Set once a shutdown began: no request is served from then on. */
  shuttingDown: Promise<void> | null = null;
  private current: Setup | null = null;

  /** What hello set up, or null before it. */
  get setup(): Setup | null {
    return this.current;
  }

  /** Records what hello set up; a second hello is a protocol error. */
  start(setup: Setup): void {
    if (this.current) throw new ProtocolError('hello was already received');
    this.current = setup;
  }

  /** What hello set up; a request that needs it before hello is a protocol error. */
  started(): Setup {
    if (!this.current) throw new ProtocolError('hello must come first');
    return this.current;
  }

  job(id: number): SupervisedJob {
    const job = this.jobs.get(id);
    if (!job) throw new JobNotFoundError(id, [...this.jobs.keys()]);
    return job;
  }

  /**
   * Has every job whose leader has exited look again whether it is done: after a reap (it may have
   * been the last process or zombie some job waited for), and after a spawn on a spawner thread
   * failed (its child was a zombie for a moment, which a look may have seen, and that spawn reaped
   * it itself: no reap will be reported).
   */
  pokeEndedJobs(): void {
    for (const job of this.jobs.values()) if (job.exit && !job.cleanedUp) job.poke();
  }
}
