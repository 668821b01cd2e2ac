/**
 * What the runtime remembers of each job: the command as the model gave it, and the lifecycle as
 * the supervisor reports it.
 */
import type { ContainmentMode } from './protocol/messages.js';

/** `running`; `exited` with a code; `killed` by a signal; `failed` to start; `lost` with its supervisor. */
export type JobState = 'starting' | 'running' | 'exited' | 'killed' | 'failed' | 'lost';

export interface JobRecord {
  id: number;
  command: string;
  cwd: string;
  state: JobState;
  pid: number | null;
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
  /** The supervisor that owns it (its pid), for cleanup after that supervisor dies. */
  supervisorPid: number | null;
  containment: ContainmentMode | null;
}

export function isActive(record: JobRecord): boolean {
  return record.state === 'starting' || record.state === 'running';
}
