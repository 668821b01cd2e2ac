/**
 * JobRuntime: what the agent runtime embeds. It keeps the registry of jobs (numbers 0, 1, 2, ...
 * never reused), has a supervisor process do every piece of operating-system work (spawning,
 * signalling, reaping, kernel locks), and turns the supervisor's replies and events into job states
 * and reports. Input is validated here, where it enters; what flows inward is already checked.
 */
import { HephError, InvalidInputError, RuntimeClosedError, SupervisorLostError } from '../protocol/errors.js';
import { SIGNAL_NAMES, type Containment, type ContainmentMode, type JobFacts, type LostJob, type ReadWait, type SignalName, type SupervisorConfig, type SupervisorEvent } from '../protocol/messages.js';
import type { OutputRead } from '../protocol/output.js';
import type { PatternSpec } from '../protocol/pattern.js';
import { LockTable, normalizeResources, type LockOwner, type NormalizedResource, type ResourceSpec } from '../locks/index.js';
import { buildReport, type JobReport, type WaitOutcome } from '../reports/report.js';
import { Changes } from './changes.js';
import { checkedPattern, envEntries, validateCommand } from './input-checks.js';
import { registerInternals } from './internals.js';
import { JobRegistry } from './job-registry.js';
import { capacityError, hasEnded, isRunning, type JobRecord } from './job-record.js';
import { kernelLockBackend, type KernelLockBackend } from './kernel-lock-backend.js';
import { containmentLimitations, inputProblem, lockBreachWarning, lockDirLimitations } from '../wording.js';
import {
  DEFAULT_MAX_BYTES,
  DEFAULT_TAIL_LINES,
  DRAIN_MS,
  integerOption,
  MAX_COMMAND_BYTES,
  MAX_TIMEOUT_MS,
  MAX_WAIT_MS,
  normalizeOptions,
  OUTPUT_HEAD_LINES,
  type JobRuntimeOptions,
  type NormalizedOptions,
} from './options.js';
import type { SupervisorClient } from './supervisor-client.js';
import { SupervisorKeeper } from './supervisor-keeper.js';

/** Which lines a read returns: the last `tail`, or those after `since`, within `maxBytes`. */
interface OutputReadRequest {
  tail: number;
  since: number | undefined;
  maxBytes: number;
}

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
  /** Resources the job holds from before it spawns until its cleanup is complete. Default: none. */
  locks?: readonly ResourceSpec[];
  /** The ref (branch/worktree name) the call belongs to, for messages. */
  ref?: string;
  /** Cancels the wait for locks. */
  signal?: AbortSignal;
  /** Milliseconds to wait for locks before giving up. Default: no limit. */
  lockTimeoutMs?: number;
  /** Stop the job (as kill does) after this many milliseconds. Default: no limit. */
  timeoutMs?: number;
  /** Instead of the settle window, wait up to this many ms for the job to end or to print a line
   * matching `until` (a dev server's ready line). Default: the settle window. */
  waitMs?: number;
  /** A regular expression (or its source) that ends the wait when a new output line matches. It is
   * run by RE2 (linear time): backreferences and lookaround are refused. */
  until?: RegExp | string;
}

export interface StatusOptions {
  /** How many of the last lines to show. Default: 50. */
  lines?: number;
  /** Lines after this sequence number (a cursor read). */
  since?: number;
  /** Bound on the bytes of output returned, at most `settings.maxReadBytes` (about 15.5 MiB with
   * the default limits: every reply must fit in one frame of the channel). Default: 65536. */
  maxBytes?: number;
  /** Wait up to this many ms for the job to end (or, with `until`, for a new matching line) first. */
  waitMs?: number;
  /** A regular expression (or its source): with `waitMs`, return as soon as a new line matches. It
   * is run by RE2 (linear time): backreferences and lookaround are refused. */
  until?: RegExp | string;
}



export interface KillOptions {
  /** Default: TERM (grace, then KILL). */
  signal?: SignalName;
  /** Milliseconds between TERM and KILL. Default: the runtime's killGraceMs. */
  graceMs?: number;
}

/** A job's lifecycle as it happens: the leader ended, the job was lost, or cleanup finished. */
export interface JobEvent {
  type: 'exited' | 'lost' | 'cleaned-up';
  job: number;
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
}

/** The read a report of a job's own call shows: the default tail. */
const TAIL_READ: OutputReadRequest = { tail: DEFAULT_TAIL_LINES, since: undefined, maxBytes: DEFAULT_MAX_BYTES };

export class JobRuntime {
  private readonly options: NormalizedOptions;
  private readonly jobs: JobRegistry;
  private readonly changes = new Changes();
  private readonly listeners = new Set<(event: JobEvent) => void>();
  private readonly keeper: SupervisorKeeper;
  private closed = false;
  /** The resource-lock table: jobs and the host's own actions (its shell tool, its publication
   * step) take resources here; every grant is also held as kernel locks by the supervisor. */
  readonly locks: LockTable;
  private readonly lockBackend: KernelLockBackend;

  private constructor(options: NormalizedOptions) {
    this.options = options;
    this.keeper = new SupervisorKeeper(() => this.supervisorConfig(), {
      onEvent: (event) => this.onEvent(event),
      onLost: (dead, error) => this.onLost(dead, error),
    });
    this.jobs = new JobRegistry(options.keepFinished, (record) => {
      const supervisor = this.keeper.current;
      if (supervisor && record.supervisorPid === supervisor.pid) supervisor.request('forget', { job: record.id }).catch(() => undefined);
    });
    this.lockBackend = kernelLockBackend(() => this.keeper.ensure());
    this.locks = new LockTable({ backend: this.lockBackend });
    registerInternals(this, {
      supervisorPid: () => this.keeper.current?.pid ?? null,
      supervisorHello: () => this.keeper.hello,
      killSupervisor: (signal) => this.keeper.current?.kill(signal),
      disableLockVault: () => {
        this.keeper.vaultEnabled = false;
      },
      settledLostCleanups: () => this.keeper.settled(),
      waitFor: (predicate, ms) => this.changes.until(predicate, ms),
      supervisorDiagnostics: async () => (await this.keeper.ensure()).request('diagnostics', {}),
    });
  }

  /** Validates the options. The supervisor itself starts with the first call that needs it. */
  static async start(options: JobRuntimeOptions = {}): Promise<JobRuntime> {
    return new JobRuntime(normalizeOptions(options));
  }

  get settings(): Readonly<NormalizedOptions> {
    return this.options;
  }

  /** The containment mode of the running supervisor; null while none runs (see capabilities()). */
  get containmentMode(): ContainmentMode | null {
    return this.keeper.hello?.containment.mode ?? null;
  }

  /** Starts `command` through the shell; answers after the settle window (earlier if it ends).
   * With `locks`, first waits (fairly, visible in list()) until it holds all of them. */
  async background(input: BackgroundInput): Promise<JobReport> {
    this.assertOpen();
    const command = validateCommand(input?.command);
    this.assertBelowCap();
    const cwd = input.cwd ?? this.options.cwd;
    const env = envEntries(input.env ?? this.options.env);
    const wants = normalizeResources(input.locks ?? []);
    const lockTimeoutMs = input.lockTimeoutMs === undefined ? undefined : integerOption('lockTimeoutMs', input.lockTimeoutMs, 0, 0, 2 ** 31 - 1);
    const timeoutMs = input.timeoutMs === undefined ? undefined : integerOption('timeoutMs', input.timeoutMs, 0, 1, MAX_TIMEOUT_MS);
    const waitMs = input.waitMs === undefined ? undefined : integerOption('waitMs', input.waitMs, 0, 0, MAX_WAIT_MS);
    const until = input.until === undefined ? undefined : checkedPattern(input.until);
    const id = this.jobs.takeId();
    const record: JobRecord = {
      id,
      command,
      cwd,
      state: wants.length > 0 ? 'waiting' : 'starting',
      pid: null,
      pidStart: null,
      pipes: [],
      cgroup: null,
      exitCode: null,
      signal: null,
      startedAt: Date.now(),
      endedAt: null,
      cleanedUp: false,
      reason: null,
      supervisorPid: null,
      containment: null,
      lease: null,
      wants,
      abort: null,
      input: { command, cwd, env: input.env, stdin: input.stdin === true, merge: input.merge === true, locks: wants, ref: input.ref, timeoutMs },
      timedOut: false,
      timeoutTimer: null,
      stats: null,
    };
    this.jobs.add(record);
    this.changes.notify();
    try {
      if (wants.length > 0) {
        record.abort = new AbortController();
        const signal = input.signal ? AbortSignal.any([input.signal, record.abort.signal]) : record.abort.signal;
        const owner: LockOwner = { label: command, kind: 'job', jobId: id, ...(input.ref ? { ref: input.ref } : {}) };
        record.lease = await this.locks.acquire(owner, wants, { signal, ...(lockTimeoutMs === undefined ? {} : { timeoutMs: lockTimeoutMs }) });
        record.abort = null;
        // Others may have started while we waited: the cap is checked again, holding nothing if refused.
        this.assertBelowCap(record);
        record.state = 'starting';
        record.startedAt = Date.now();
        this.changes.notify();
      }
      const supervisor = await this.keeper.ensure();
      record.supervisorPid = supervisor.pid;
      record.containment = supervisor.hello?.containment.mode ?? null;
      const reply = await supervisor.request('spawn', {
        params: { job: id, command, cwd, env, stdin: input.stdin === true, merge: input.merge === true, shell: this.options.shell },
      });
      record.pid = reply.pid;
      record.pidStart = reply.start;
      record.pipes = reply.pipes;
      record.cgroup = reply.cgroup;
      record.startedAt = reply.startedAt;
      if (record.state === 'starting') record.state = 'running';
      this.armTimeout(record);
    } catch (error) {
      this.failRecord(record, error);
      return this.report(record, null);
    }
    // No settle window: the caller wants the job number now; its output is one status away.
    if (waitMs === undefined && until === undefined && this.options.settleMs === 0) return this.report(record, null);
    return this.jobs.pinned(record, async () => {
      if (waitMs === undefined && until === undefined) {
        await this.settle(record);
        return this.readReport(record, TAIL_READ);
      }
      // A dev server's ready line may already be out: the wait matches from the first line on.
      return this.readReport(record, TAIL_READ, { ms: waitMs ?? this.options.settleMs, until, from: -1 });
    });
  }

  /** Stops the job and starts its command again with the same options, as a new job. */
  async restart(id: number): Promise<{ stopped: JobReport; started: JobReport }> {
    const record = this.jobs.find(id);
    const stopped = await this.kill(id);
    const { input } = record;
    const started = await this.background({
      command: input.command,
      cwd: input.cwd,
      ...(input.env ? { env: input.env } : {}),
      stdin: input.stdin,
      merge: input.merge,
      locks: input.locks,
      ...(input.ref ? { ref: input.ref } : {}),
      ...(input.timeoutMs ? { timeoutMs: input.timeoutMs } : {}),
    });
    return { stopped, started };
  }

  /** Writes `text` to the job's stdin (started with `stdin: true`), and closes it with `close`. */
  async input(id: number, options: { text?: string; close?: boolean }): Promise<JobReport> {
    const record = this.jobs.find(id);
    const text = options.text ?? '';
    if (typeof text !== 'string') throw new InvalidInputError(inputProblem.textNotAString(text));
    if (!record.input.stdin) {
      throw new InvalidInputError(inputProblem.noStdinPipe(id));
    }
    const supervisor = this.supervisorOf(record);
    if (hasEnded(record) || !supervisor) {
      throw new InvalidInputError(inputProblem.stdinNotRead(id, record.state));
    }
    return this.jobs.pinned(record, async () => {
      await supervisor.request('write', { job: id, data: Buffer.from(text), close: options.close === true });
      return this.readReport(record, TAIL_READ);
    });
  }

  /** The resources job `id` holds (empty once released, or if it never asked for any). */
  heldResources(id: number): NormalizedResource[] {
    const record = this.jobs.find(id);
    return record.lease && !record.lease.released ? [...record.lease.resources] : [];
  }

  /** The resources job `id` is still waiting for (empty unless it is `waiting`): a call queued
   * behind them would wait for the job to start and then to end. */
  wantedResources(id: number): NormalizedResource[] {
    const record = this.jobs.find(id);
    return record.state === 'waiting' ? [...record.wants] : [];
  }

  /** The job's state and the last lines of its output (or the lines after a cursor). */
  async status(id: number, options: StatusOptions = {}): Promise<JobReport> {
    const record = this.jobs.find(id);
    const tail = integerOption('lines', options.lines, DEFAULT_TAIL_LINES, 0, 1_000_000);
    const since = options.since === undefined ? undefined : integerOption('since', options.since, -1, -1, Number.MAX_SAFE_INTEGER);
    const maxBytes = integerOption('maxBytes', options.maxBytes, DEFAULT_MAX_BYTES, 1, this.options.maxReadBytes);
    const waitMs = options.waitMs === undefined ? undefined : integerOption('waitMs', options.waitMs, 0, 0, MAX_WAIT_MS);
    const until = options.until === undefined ? undefined : checkedPattern(options.until);
    const wait = waitMs === undefined ? undefined : { ms: waitMs, until, from: since };
    return this.jobs.pinned(record, () => this.readReport(record, { tail, since, maxBytes }, wait));
  }

  /** One report (without output) per job, oldest first. */
  list(): JobReport[] {
    return this.jobs.all().map((record) => this.report(record, null));
  }

  /** Stops the job and everything it started; resolves with its final report once all is gone. */
  async kill(id: number, options: KillOptions = {}): Promise<JobReport> {
    const record = this.jobs.find(id);
    const signal = options.signal ?? 'TERM';
    if (!SIGNAL_NAMES.includes(signal)) {
      throw new InvalidInputError(inputProblem.badSignal(signal, SIGNAL_NAMES));
    }
    const graceMs = integerOption('graceMs', options.graceMs, this.options.killGraceMs, 0, 600_000);
    return this.jobs.pinned(record, () => this.stop(record, signal, graceMs));
  }

  /** `/job-kill ID`: the user's cancellation. The same stop as kill, never gated (see tools). */
  userKill(id: number): Promise<JobReport> {
    return this.kill(id);
  }

  /** Containment in use (starts the supervisor to find out), signals and limits. */
  async capabilities(): Promise<Capabilities> {
    this.assertOpen();
    const hello = (await this.keeper.ensure()).hello!;
    return {
      containment: hello.containment,
      subreaper: hello.subreaper,
      supervisorPid: hello.pid,
      signals: [...SIGNAL_NAMES],
      maxJobs: this.options.maxJobs,
      limitations: [...containmentLimitations(hello.containment), ...lockDirLimitations(hello.locks)],
      limits: {
        outputLines: this.options.outputLines,
        lineBytes: this.options.lineBytes,
        outputBytes: this.options.outputBytes,
        maxCommandBytes: MAX_COMMAND_BYTES,
        maxReadBytes: this.options.maxReadBytes,
      },
    };
  }

  /** Ends the session: stops every job as kill does, then the supervisor. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const active = this.jobs.all().filter((record) => !record.cleanedUp && record.state !== 'lost' && record.state !== 'failed');
    await Promise.all(active.map((record) => this.kill(record.id).catch(() => undefined)));
    await this.keeper.shutdown();
  }

  /** Calls `listener` on every job event; returns the function that stops it. */
  onJobEvent(listener: (event: JobEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---------------------------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new RuntimeClosedError();
  }

  private assertBelowCap(except?: JobRecord): void {
    const refused = capacityError(this.jobs.all().filter((record) => isRunning(record) && record !== except), this.options.maxJobs);
    if (refused) throw refused;
  }

  /** The supervisor that runs the job, while it is the live one (not after it died). */
  private supervisorOf(record: JobRecord): SupervisorClient | null {
    const supervisor = this.keeper.current;
    return supervisor && !supervisor.isLost && supervisor.pid === record.supervisorPid ? supervisor : null;
  }

  private armTimeout(record: JobRecord): void {
    const ms = record.input.timeoutMs;
    if (!ms) return;
    record.timeoutTimer = setTimeout(() => {
      record.timeoutTimer = null;
      if (!isRunning(record)) return;
      record.timedOut = true;
      this.kill(record.id).catch(() => undefined);
    }, ms);
    record.timeoutTimer.unref();
  }

  /** A call that did not produce a running job: says why, and holds nothing afterwards. */
  private failRecord(record: JobRecord, error: unknown): void {
    if (error instanceof SupervisorLostError) {
      record.state = 'lost';
      record.reason = `its supervisor died while the job was being started, so whether it ran is unknown; nothing of it was left running (${error.message})`;
    } else {
      record.state = 'failed';
      record.reason = error instanceof Error ? error.message : String(error);
    }
    record.abort = null;
    record.endedAt = Date.now();
    record.cleanedUp = true;
    record.lease?.release();
    this.changes.notify();
  }

  private async stop(record: JobRecord, signal: SignalName, graceMs: number): Promise<JobReport> {
    if (record.state === 'waiting') {
      // Not started: cancelling its wait is the whole stop (unless it was granted just now).
      record.abort?.abort(new Error('killed while waiting for its locks'));
      await this.changes.until(() => record.state !== 'waiting', 10_000);
    }
    // Being spawned: let the spawn land first, so the kill cannot miss it.
    if (record.state === 'starting') await this.changes.until(() => record.state !== 'starting', 30_000);
    if (!record.cleanedUp && record.state !== 'lost' && record.state !== 'failed') {
      const supervisor = this.supervisorOf(record);
      if (supervisor) {
        try {
          this.applyFacts(record, await supervisor.request('kill', { params: { job: record.id, signal, graceMs } }));
        } catch (error) {
          if (!(error instanceof SupervisorLostError)) throw error;
          await this.keeper.settled();
        }
      }
    }
    return this.readReport(record, TAIL_READ);
  }

  /** The settle window: a job that dies at once is reported dead, with its output. */
  private async settle(record: JobRecord): Promise<void> {
    if (this.options.settleMs === 0) return;
    const ended = await this.changes.until(() => !isRunning(record), this.options.settleMs);
    // Exited within the window: give its output a moment to be drained (bounded: leftovers
    // being cleaned up must not hold the answer).
    if (ended) await this.changes.until(() => record.cleanedUp, DRAIN_MS);
  }

  /**
   * The job's report with a read of its output, after an optional wait. The supervisor answers
   * the wait and the read in one round trip (it sees the output first); only a job it does not
   * run yet (still waiting for its locks, or being spawned) is waited for here first.
   */
  private async readReport(record: JobRecord, read: OutputReadRequest, wait?: { ms: number; until: PatternSpec | undefined; from: number | undefined }): Promise<JobReport> {
    const started = Date.now();
    const outcome = (kind: WaitOutcome['kind'], line?: string): WaitOutcome => ({
      kind,
      waitedMs: Date.now() - started,
      ...(line === undefined ? {} : { line }),
      ...(wait?.until ? { pattern: wait.until.source } : {}),
    });
    let waited: WaitOutcome | undefined;
    let remoteWait: ReadWait | undefined;
    if (wait) {
      // Without a pattern a job not yet running is waited for here until it runs (or ends); with
      // one, only output can match, and a job not in the supervisor has none.
      if (!wait.until && (record.state === 'waiting' || record.state === 'starting')) {
        await this.changes.until(() => record.state !== 'waiting' && record.state !== 'starting', wait.ms);
      }
      const left = Math.max(0, wait.ms - (Date.now() - started));
      if (!this.supervisorOf(record) || record.state === 'failed' || (!wait.until && record.state === 'waiting')) {
        waited = outcome(hasEnded(record) ? 'ended' : 'timed-out');
      } else {
        remoteWait = {
          ms: left,
          ...(wait.until ? { until: wait.until } : {}),
          ...(wait.from === undefined ? {} : { from: wait.from }),
        };
      }
    }
    const reply = await this.readOutput(record, read, remoteWait);
    if (remoteWait) {
      waited = reply?.waited ? { ...outcome(reply.waited.kind, reply.waited.line) } : outcome(hasEnded(record) ? 'ended' : 'timed-out');
    }
    return buildReport(record, reply?.output ?? null, {
      maxJobs: this.options.maxJobs,
      ...(read.since === undefined ? {} : { since: read.since }),
      ...(waited ? { waited } : {}),
    });
  }

  private async readOutput(
    record: JobRecord,
    read: OutputReadRequest,
    wait: ReadWait | undefined,
  ): Promise<{ output: OutputRead; waited?: { kind: WaitOutcome['kind']; line?: string } } | null> {
    const supervisor = this.supervisorOf(record);
    if (!supervisor || record.state === 'failed') return null;
    try {
      const reply = await supervisor.request('read', {
        params: {
          job: record.id,
          tail: read.tail,
          ...(read.since === undefined ? {} : { since: read.since }),
          maxBytes: read.maxBytes,
          ...(wait ? { wait } : {}),
        },
      });
      this.applyFacts(record, reply.facts);
      return reply;
    } catch (error) {
      if (error instanceof HephError && (error.code === 'ERR_SUPERVISOR_LOST' || error.code === 'ERR_JOB_NOT_FOUND')) return null;
      throw error;
    }
  }

  private report(record: JobRecord, output: OutputRead | null): JobReport {
    return buildReport(record, output, { maxJobs: this.options.maxJobs });
  }

  private supervisorConfig(): SupervisorConfig {
    const o = this.options;
    return {
      containment: o.containment,
      cgroupParent: o.cgroupParent,
      lockDir: o.lockDir,
      forceFork: o.forceFork,
      killGraceMs: o.killGraceMs,
      drainMs: DRAIN_MS,
      output: { maxLines: o.outputLines, maxLineBytes: o.lineBytes, maxBytes: o.outputBytes, headLines: OUTPUT_HEAD_LINES },
    };
  }

  private onEvent(event: SupervisorEvent): void {
    if (event.event === 'protocol-error') return;
    const record = this.jobs.get(event.job);
    if (!record) return;
    if (event.event === 'exited') {
      this.applyExit(record, event.code, event.signal, event.at);
    } else {
      this.markCleanedUp(record);
      this.jobs.evictFinished();
    }
    this.changes.notify();
  }

  private applyExit(record: JobRecord, code: number | null, signal: string | null, at: number): void {
    if (record.endedAt !== null) return;
    record.state = signal ? 'killed' : 'exited';
    record.exitCode = code;
    record.signal = signal;
    record.endedAt = at;
    this.emit({ type: 'exited', job: record.id });
  }

  /** Every process of the job is gone: only now are its resources released (SPEC 6). */
  private markCleanedUp(record: JobRecord): void {
    if (record.cleanedUp) return;
    record.cleanedUp = true;
    if (record.timeoutTimer) clearTimeout(record.timeoutTimer);
    record.timeoutTimer = null;
    record.lease?.release();
    this.emit({ type: 'cleaned-up', job: record.id });
  }

  private applyFacts(record: JobRecord, facts: JobFacts): void {
    record.stats = facts.stats ?? null;
    if (facts.exit) this.applyExit(record, facts.exit.code, facts.exit.signal, facts.exit.at);
    if (facts.cleanedUp) this.markCleanedUp(record);
    this.changes.notify();
  }

  private emit(event: JobEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // A host's listener must not break the runtime.
      }
    }
  }

  /**
   * The supervisor died: its running jobs are lost. A fresh supervisor stops what is left of them
   * (this process never signals a job itself), and the host's own leases are taken again there.
   */
  private onLost(dead: SupervisorClient, error: SupervisorLostError): void {
    const now = Date.now();
    const orphaned = this.jobs.all().filter((record) => record.supervisorPid === dead.pid && !record.cleanedUp && record.state !== 'waiting');
    for (const record of orphaned) {
      if (!isRunning(record)) continue;
      record.state = 'lost';
      record.reason = `its supervisor died (${error.message})`;
      record.endedAt = now;
      this.emit({ type: 'lost', job: record.id });
    }
    // A leader already reaped gives its pid (and so its process group id) back: only the groups of
    // leaders still running are ours to signal.
    const leftovers: LostJob[] = orphaned.map((record) => {
      const leader = record.endedAt === null || record.state === 'lost';
      return { cgroup: record.cgroup, pid: leader ? record.pid : null, start: leader ? record.pidStart : null, pipes: [...record.pipes] };
    });
    void this.keeper.track(
      this.keeper
        .cleanupAfter(dead, leftovers, this.closed)
        .catch(() => undefined)
        .then(() => {
          for (const record of orphaned) this.markCleanedUp(record);
          this.changes.notify();
        }),
    );
    this.changes.notify();
    if (!this.closed) void this.keeper.track(this.carryLeasesOver(dead));
  }

  /**
   * The dead supervisor's leases move to the fresh one: kept all along in the lock vault, or, when
   * not, taken again, and then reported, since another runtime could have had them in between.
   */
  private async carryLeasesOver(dead: SupervisorClient): Promise<void> {
    try {
      const { open, contended } = await this.lockBackend.retake(dead);
      if (open.length > 0) process.emitWarning(lockBreachWarning(open, contended), { code: 'HEPH_JOBS_LOCK_BREACH' });
    } catch {
      // No fresh supervisor could be started: the next call will say so.
    }
  }
}
