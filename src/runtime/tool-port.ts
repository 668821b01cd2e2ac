/**
 * What the tools (and the CLI built on them) ask of a runtime beyond its public calls: one job's
 * view, what it holds and still waits for, a job's id as soon as it exists, the user's
 * cancellation, the normalized options. Kept off the public JobRuntime: each runtime registers its
 * port here, and createTools reads it. A host's own runtime implements the port (ToolRuntime).
 */
import type { LockTable, NormalizedResource } from '../locks/index.js';
import type { JobReport } from '../reports/report.js';
import type { BackgroundInput, JobEvent, KillOptions, StatusOptions } from './api.js';
import type { NormalizedOptions } from './options.js';
import type { Notify } from './notify.js';

export interface ToolRuntime {
  /** The options as the runtime normalized them (limits, cwd, env). */
  readonly settings: Readonly<NormalizedOptions>;
  readonly locks: LockTable;
  /** As JobRuntime.background; `onQueued` hears the job's id as soon as the job exists. */
  background(input: BackgroundInput, onQueued?: (id: number) => void): Promise<JobReport>;
  status(id: number, options?: StatusOptions): Promise<JobReport>;
  list(): JobReport[];
  kill(id: number, options?: KillOptions): Promise<JobReport>;
  /** `/job-kill ID`: the user's cancellation (the same stop as kill, never gated). */
  userKill(id: number): Promise<JobReport>;
  input(id: number, options: { text?: string; close?: boolean }): Promise<JobReport>;
  restart(id: number, options?: Pick<BackgroundInput, 'answerWithinMs'>): Promise<{ stopped: JobReport; started: JobReport }>;
  /** As JobRuntime.notify (a host's own runtime without it: the tools refuse `notify`). */
  notify?(id: number, notify: Notify | readonly Notify[]): Promise<void>;
  /** Job `id`'s output lines in all once they are final (known without a read); else null. */
  totalLines?(id: number): number | null;
  onJobEvent?(listener: (event: JobEvent) => void): () => void;
  /** Job `id`'s report without output; undefined when there is no such job. */
  job(id: number): JobReport | undefined;
  /** Every job's id, oldest first. */
  jobIds(): number[];
  /** The jobs that count toward the cap now. */
  running(): { id: number; command: string }[];
  /** The resources job `id` holds (empty once released). Throws JobNotFoundError. */
  held(id: number): NormalizedResource[];
  /** The resources job `id` still waits for (empty unless it is waiting). Throws JobNotFoundError. */
  wanted(id: number): NormalizedResource[];
}

const ports = new WeakMap<object, ToolRuntime>();

export function registerToolPort(runtime: object, port: ToolRuntime): void {
  ports.set(runtime, port);
}

/** The port of a JobRuntime; a host's own runtime (no port registered) is its own port. */
export function toolPortOf(runtime: object): ToolRuntime {
  return ports.get(runtime) ?? (runtime as ToolRuntime);
}
