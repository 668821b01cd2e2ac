/**
 * A Mastra `SandboxProcessManager` whose processes are heph-jobs jobs, and the sandbox that uses
 * it. Mastra's execute_command (foreground and background), get_process_output and kill_process
 * then run commands contained: every process a command starts is stopped with it, each exit
 * cleans up what the command left behind, and `runtime.close()` stops them all.
 *
 * - A process's `pid` is its job number, the one heph-jobs' own tools take (`job_status {"id"}`),
 *   and `get()` finds a job those tools started as well.
 * - Output is read from the job line by line as it comes (a long read that answers on each new
 *   line), each line with its newline; an unfinished line (a prompt) is passed on as it grows.
 *   What a job's ring dropped before it was read (more than its 2000 lines at once) is not seen.
 * - `kill()` stops the job and every process it started with SIGKILL, as Mastra's contract says
 *   (`killSignal: 'TERM'`: SIGTERM, the runtime's grace, then SIGKILL, as job_kill does), and
 *   resolves once all are gone. A job killed by a signal exits with 128 + its number; one its
 *   `timeout` stopped, with 124 (as Mastra's local sandbox does).
 */
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { MastraSandbox, ProcessHandle, SandboxProcessManager, type CommandResult, type ProviderStatus, type MastraSandboxOptions, type ProcessInfo, type SpawnProcessOptions } from '@mastra/core/workspace';
import type { JobReport } from '../reports/report.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { toolPortOf } from '../runtime/tool-port.js';
import { ENDED_STATES, followOutput } from './job-output.js';
import type { ResourceSpec } from '../locks/index.js';
import * as say from '../wording/index.js';

export interface HephJobsProcessManagerOptions {
  /** Variables every process gets on top of the runtime's environment (and the sandbox's overlay). */
  env?: Record<string, string | undefined>;
  /** Locks every process holds while it runs (`port:5173`, `path:/repo`): a second waits for the first. Default: none. */
  locks?: readonly ResourceSpec[];
  /** How `kill()` stops a job: `KILL` (default, Mastra's contract) at once; `TERM` with the grace first, so a server can clean up. */
  killSignal?: 'KILL' | 'TERM';
}

/** A running or ended job, as a Mastra process handle. */
class HephJobsProcessHandle extends ProcessHandle {
  readonly pid: string;
  exitCode: number | undefined = undefined;
  private readonly done: Promise<CommandResult>;

  constructor(
    private readonly runtime: JobRuntime,
    private readonly job: number,
    command: string,
    private readonly timeoutMs: number | undefined,
    private readonly stdin: boolean,
    private readonly killSignal: 'KILL' | 'TERM',
    options?: SpawnProcessOptions,
  ) {
    super(options);
    this.pid = String(job);
    this.command = command;
    this.done = this.follow();
  }

  override async wait(): Promise<CommandResult> {
    return this.done;
  }

  /** Stops the job and everything it started; false when it had ended already. */
  async kill(): Promise<boolean> {
    if (this.exitCode !== undefined) return false;
    const report = await this.runtime.kill(this.job, { signal: this.killSignal });
    return report.kill?.kind !== 'ended';
  }

  async sendStdin(data: string): Promise<void> {
    this.assertStdin();
    await this.runtime.input(this.job, { text: data });
  }

  override async closeStdin(): Promise<void> {
    this.assertStdin();
    await this.runtime.input(this.job, { close: true });
  }

  private assertStdin(): void {
    if (this.exitCode !== undefined) throw new Error(`Process ${this.pid} has already exited with code ${this.exitCode}`);
    if (!this.stdin) throw new Error(`Process ${this.pid} does not have stdin available`);
  }

  /** Passes the job's output on as it comes; resolves with the result once the job has ended and all of it is read. */
  private async follow(): Promise<CommandResult> {
    const { report, error } = await followOutput(this.runtime, this.job, (stream, data) => (stream === 'stderr' ? this.emitStderr(data) : this.emitStdout(data)));
    return this.finish(report, error);
  }

  private finish(report: JobReport | null, error: unknown): CommandResult {
    const timedOut = report?.timedOutAfterMs != null;
    let exitCode = 1;
    if (report?.state === 'exited') exitCode = report.exitCode ?? 0;
    else if (report?.state === 'killed') exitCode = timedOut ? 124 : 128 + (os.constants.signals[(report.signal ?? 'SIGKILL') as NodeJS.Signals] ?? 9);
    if (timedOut) this.emitStderr(`\nProcess timed out after ${this.timeoutMs ?? report!.timedOutAfterMs}ms`);
    else if (report?.reason) this.emitStderr(`${report.reason}\n`);
    else if (error !== null && (report === null || !ENDED_STATES.has(report.state))) this.emitStderr(`${error instanceof Error ? error.message : String(error)}\n`);
    this.exitCode = exitCode;
    return {
      success: exitCode === 0,
      exitCode,
      stdout: this.stdout,
      stderr: this.stderr,
      executionTimeMs: report?.elapsedMs ?? 0,
      killed: report?.state === 'killed',
      timedOut,
    };
  }
}

/** Mastra's process manager over a heph-jobs runtime: each process is a job. */
export class HephJobsProcessManager extends SandboxProcessManager {
  private readonly locks: readonly ResourceSpec[];
  private readonly killSignal: 'KILL' | 'TERM';

  constructor(
    private readonly runtime: JobRuntime,
    options: HephJobsProcessManagerOptions = {},
  ) {
    super({ env: options.env ?? {} });
    const { killSignal = 'KILL' } = options;
    if (killSignal !== 'KILL' && killSignal !== 'TERM') throw new TypeError(say.adapterConfig.badKillSignal(killSignal));
    this.locks = options.locks ?? [];
    this.killSignal = killSignal;
  }

  override async spawn(command: string, options: SpawnProcessOptions = {}): Promise<ProcessHandle> {
    const { settings } = toolPortOf(this.runtime);
    const base = this.sandbox?.workingDirectory ?? settings.cwd;
    const cwd = options.cwd ? path.resolve(base, options.cwd) : base;
    const added = { ...this.env, ...options.env };
    const env = Object.keys(added).length === 0 ? undefined : withoutUnset({ ...settings.env, ...added });
    const stdin = options.stdinMode !== 'ignore';
    const timeoutMs = options.timeout === undefined ? undefined : Math.max(1, Math.ceil(options.timeout));
    const report = await this.runtime.background({
      command,
      cwd,
      ...(env === undefined ? {} : { env }),
      stdin,
      waitMs: 0,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(this.locks.length === 0 ? {} : { locks: this.locks }),
      ...(options.abortSignal ? { signal: options.abortSignal } : {}),
    });
    if (report.state === 'failed' || report.state === 'cancelled' || report.state === 'lost') {
      throw new Error(report.reason ?? report.text);
    }
    const handle = new HephJobsProcessHandle(this.runtime, report.id, command, timeoutMs, stdin, this.killSignal, options);
    this._tracked.set(handle.pid, handle);
    return handle;
  }

  override async list(): Promise<ProcessInfo[]> {
    return [...this._tracked.values()].map((handle) => ({
      pid: handle.pid,
      ...(handle.command === undefined ? {} : { command: handle.command }),
      running: handle.exitCode === undefined,
      ...(handle.exitCode === undefined ? {} : { exitCode: handle.exitCode }),
    }));
  }

  /** The handle of a process this manager started, else of a job of the runtime with that number (started by heph-jobs' own tools). */
  override async get(pid: string): Promise<ProcessHandle | undefined> {
    const tracked = this._tracked.get(pid);
    if (tracked || !/^\d{1,15}$/.test(pid)) return tracked;
    const job = this.runtime.list().find((candidate) => candidate.id === Number(pid));
    if (!job) return undefined;
    const handle = new HephJobsProcessHandle(this.runtime, job.id, job.command, undefined, true, this.killSignal);
    this._tracked.set(handle.pid, handle);
    return handle;
  }

  /** Stops every process this manager started that still runs; resolves once all are gone. */
  async stopAll(): Promise<void> {
    await Promise.all([...this._tracked.values()].map((handle) => handle.kill().catch(() => false)));
  }
}

export interface HephJobsSandboxOptions extends Omit<MastraSandboxOptions, 'processes'>, HephJobsProcessManagerOptions {
  /** The sandbox's id. Default: a new one. */
  id?: string;
}

/**
 * A Mastra sandbox whose commands and processes are heph-jobs jobs of `runtime` (the host's,
 * which it starts and closes). Its `destroy()` stops the jobs it started.
 */
export class HephJobsSandbox extends MastraSandbox {
  readonly id: string;
  readonly name = 'HephJobsSandbox';
  readonly provider = 'heph-jobs';
  status: ProviderStatus = 'pending';
  declare readonly processes: HephJobsProcessManager;

  constructor(runtime: JobRuntime, options: HephJobsSandboxOptions = {}) {
    const { id, env, locks, killSignal, ...sandboxOptions } = options;
    const processes = new HephJobsProcessManager(runtime, { ...(locks === undefined ? {} : { locks }), ...(killSignal === undefined ? {} : { killSignal }) });
    super({ ...sandboxOptions, ...(env === undefined ? {} : { env }), name: 'HephJobsSandbox', processes });
    this.id = id ?? `heph-jobs-${randomUUID()}`;
  }

  /** Nothing to start: the runtime starts its supervisor with the first job. */
  override async start(): Promise<void> {}

  override async destroy(): Promise<void> {
    await this.processes.stopAll();
  }

  override getInstructions(): string {
    return 'Commands run as heph-jobs jobs: each is contained with every process it starts, which are stopped when it ends or is killed.';
  }
}

function withoutUnset(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
