/**
 * Every message that crosses the channel between the runtime and its supervisor. Requests carry
 * an `id` and get exactly one reply with the same id; events carry none.
 */
import type { SerializedError } from '../errors.js';
import type { JobStats } from '../reports/stats-format.js';

export type ContainmentMode = 'cgroup' | 'process-group';
export type ContainmentChoice = 'auto' | ContainmentMode;
export type SignalName = 'INT' | 'TERM' | 'KILL';

/** A resource as the supervisor locks it (already validated and normalised by the runtime). */
export interface LockResource {
  resource: string;
  kind: string;
  value: string;
  mode: 'exclusive' | 'shared';
}

export interface SupervisorConfig {
  /** Directory of the lock files (created 0700). */
  lockDir: string;
  containment: ContainmentChoice;
  /** Override for the cgroup v2 directory under which the supervisor makes its subtree (tests). */
  cgroupParent: string | null;
  /** Use the fork path instead of clone3 (tests of that path). */
  forceFork: boolean;
  killGraceMs: number;
  /** How long output is still drained after a job's processes are gone... or its leader exited. */
  drainMs: number;
  output: { maxLines: number; maxLineBytes: number; maxBytes: number; headLines: number };
}

export interface Containment {
  mode: ContainmentMode;
  /** The supervisor's cgroup subtree, when mode is 'cgroup'. */
  cgroupRoot: string | null;
  /** Why this mode: what was detected, or why cgroups could not be used. */
  reason: string;
}

export interface HelloReply {
  pid: number;
  containment: Containment;
  subreaper: boolean;
  /** Node's internal list of loaded modules and bindings, to prove child_process is never loaded. */
  moduleLoadList: string[];
}

export interface SpawnParams {
  job: number;
  command: string;
  cwd: string;
  env: string[];
  stdin: boolean;
  merge: boolean;
  shell: string;
}

export interface SpawnReply {
  pid: number;
  cgroup: string | null;
  method: 'clone3' | 'fork';
  startedAt: number;
}

export interface KillParams {
  job: number;
  signal: SignalName;
  graceMs: number;
}

export interface ReadParams {
  job: number;
  tail?: number;
  since?: number;
  maxBytes?: number;
}

/** The supervisor's view of one job's processes. */
export interface JobFacts {
  job: number;
  pid: number;
  cgroup: string | null;
  /** Leader exit, once reaped. */
  exit: { code: number | null; signal: string | null; at: number } | null;
  /** True once every process of the job is gone and reaped and its cgroup removed. */
  done: boolean;
  /** Processes of the job still alive (leader included). */
  procs: number;
  /** Whether the job has a stdin pipe still open. */
  stdinOpen: boolean;
  /** CPU, memory, processes and listening ports while the job runs; null once done. */
  stats: JobStats | null;
}

export type Request =
  | { id: number; type: 'hello'; config: SupervisorConfig }
  | { id: number; type: 'spawn'; params: SpawnParams }
  | { id: number; type: 'kill'; params: KillParams }
  | { id: number; type: 'read'; params: ReadParams }
  | { id: number; type: 'facts'; job: number }
  | { id: number; type: 'forget'; job: number }
  | { id: number; type: 'lock'; lease: number; resources: LockResource[]; owner: { label: string; job: number | null } }
  | { id: number; type: 'unlock'; lease: number }
  | { id: number; type: 'write'; job: number; data: Uint8Array; close: boolean }
  | { id: number; type: 'subscribe'; job: number; on: boolean }
  | { id: number; type: 'ping' }
  | { id: number; type: 'shutdown' };

export type RequestType = Request['type'];

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

export type SupervisorEvent =
  | { event: 'exited'; job: number; code: number | null; signal: string | null; at: number }
  | { event: 'done'; job: number; at: number }
  | { event: 'output'; job: number; lines: number }
  | { event: 'protocol-error'; message: string };

export type Incoming = Reply | SupervisorEvent;

/** One line of a job's output, and one read of it: defined by the supervisor's ring, which
 * produces them, and sent over the channel as they are. */
export type { OutputLine, OutputRead as OutputSnapshot } from './output.js';
