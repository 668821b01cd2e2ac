/**
 * JobRuntime: what the agent runtime embeds. It keeps the registry of jobs (numbers 0, 1, 2, ...
 * never reused), starts the supervisor lazily, and turns the supervisor's events into job states.
 */
import {
  HephError,
  InvalidInputError,
  JobLimitError,
  JobNotFoundError,
  RuntimeClosedError,
  SupervisorLostError,
} from './errors.js';
import { isActive, isLive, type JobRecord } from './job-record.js';
import { LockTable, normalizeResources, type LockOwner, type NormalizedResource, type ResourceSpec } from './locks/index.js';
import { cleanupLostSupervisor } from './lost-cleanup.js';
import { compilePattern, envEntries, validateCommand } from './runtime/input-checks.js';
import { containmentLimitations } from './wording.js';
import { kernelLockBackend, type KernelLockBackend } from './kernel-lock-backend.js';
import { integerOption, MAX_COMMAND_BYTES, DRAIN_MS, normalizeOptions, type JobRuntimeOptions, type NormalizedOptions } from './options.js';
import { describeValue as describe } from './protocol/describe.js';
import type { Containment, HelloReply, JobFacts, SignalName, SpawnReply, SupervisorConfig, SupervisorEvent } from './protocol/messages.js';
import { buildReport, type JobReport, type OutputSnapshot, type WaitOutcome } from './reports/report.js';
import { SupervisorClient } from './supervisor-client.js';

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
  /** A regular expression (or its source) that ends the wait when a new output line matches. */
  until?: RegExp | string;
}

export interface StatusOptions {
  /** How many of the last lines to show. Default: 50. */
  lines?: number;
  /** Lines after this sequence number (a cursor read). */
  since?: number;
  /** Bound on the bytes of output returned. Default: 65536. */
  maxBytes?: number;
  /** Wait up to this many ms for the job to end (or, with `until`, for a new matching line) first. */
  waitMs?: number;
  /** A regular expression (or its source): with `waitMs`, return as soon as a new line matches. */
  until?: RegExp | string;
}


/** Longest wait one call may ask for (a model's tool call should not hang for hours). */
export const MAX_WAIT_MS = 10 * 60 * 1000;
/** Longest per-job timeout. */
export const MAX_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;

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
  limits: { outputLines: number; lineBytes: number; outputBytes: number; maxCommandBytes: number };
}

/** Tail shown when the caller asks for no particular number of lines. */
export const DEFAULT_TAIL_LINES = 50;
/** Bound on the output one read returns (the peer system's default). */
export const DEFAULT_MAX_BYTES = 64 * 1024;
/** The read a report of a job's own call shows: the default tail. */
const TAIL_READ = { tail: DEFAULT_TAIL_LINES, since: undefined, maxBytes: DEFAULT_MAX_BYTES };
const SIGNAL_NAMES: SignalName[] = ['INT', 'TERM', 'KILL'];

export class JobRuntime {
  private readonly options: NormalizedOptions;
  private readonly records = new Map<number, JobRecord>();
  private readonly changeWaiters = new Set<() => void>();
  private readonly listeners = new Set<(event: JobEvent) => void>();
  /** Per job: how many output notifications arrived (waiters compare before and after). */
  private readonly outputSeen = new Map<number, number>();
  /** Jobs with calls in flight on them, which eviction must leave alone for now. */
  private readonly pins = new Map<JobRecord, number>();
  private supervisor: SupervisorClient | null = null;
  private starting: Promise<SupervisorClient> | null = null;
  private readonly lostCleanups = new Set<Promise<void>>();
  private nextId = 0;
  private closed = false;
  /** The resource-lock table: jobs and the host's own actions (its shell tool, its publication
   * step) take resources here; every grant is also held as kernel locks by the supervisor. */
  readonly locks: LockTable;
  private readonly lockBackend: KernelLockBackend;

  private constructor(options: NormalizedOptions) {
    this.options = options;
    this.lockBackend = kernelLockBackend(() => this.ensureSupervisor());
    this.locks = new LockTable({ backend: this.lockBackend });
  }

  /** Validates the options. The supervisor itself starts with the first call that needs it. */
  static async start(options: JobRuntimeOptions = {}): Promise<JobRuntime> {
    return new JobRuntime(normalizeOptions(options));
  }

  get settings(): Readonly<NormalizedOptions> {
    return this.options;
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
    const id = this.nextId++;
    const record: JobRecord = {
      id,
      command,
      cwd,
      state: wants.length > 0 ? 'waiting' : 'starting',
      pid: null,
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
      input: {
        command,
        cwd,
        env: input.env,
        stdin: input.stdin === true,
        merge: input.merge === true,
        locks: wants,
        ref: input.ref,
        timeoutMs: input.timeoutMs === undefined ? undefined : integerOption('timeoutMs', input.timeoutMs, 0, 1, MAX_TIMEOUT_MS),
      },
      timedOut: false,
      timeoutTimer: null,
      stats: null,
    };
    const waitMs = input.waitMs === undefined ? undefined : integerOption('waitMs', input.waitMs, 0, 0, MAX_WAIT_MS);
    const until = input.until === undefined ? undefined : compilePattern(input.until);
    this.records.set(id, record);
    this.changed();
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
        this.changed();
      }
      const supervisor = await this.ensureSupervisor();
      record.supervisorPid = supervisor.pid;
      record.containment = supervisor.hello?.containment.mode ?? null;
      const reply = (await supervisor.request({
        type: 'spawn',
        params: { job: id, command, cwd, env, stdin: input.stdin === true, merge: input.merge === true, shell: this.options.shell },
      })) as SpawnReply;
      record.pid = reply.pid;
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
    return this.pinned(record, async () => {
      let waited: WaitOutcome | undefined;
      if (waitMs === undefined && until === undefined) await this.settle(record);
      // A dev server's ready line may already be out: the wait matches from the first line on.
      else waited = await this.waitOn(record, waitMs ?? this.options.settleMs, until, -1);
      return this.readReport(record, TAIL_READ, waited);
    });
  }

  /** Stops the job and starts its command again with the same options, as a new job. */
  async restart(id: number): Promise<{ stopped: JobReport; started: JobReport }> {
    const record = this.find(id);
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
    const record = this.find(id);
    const text = options.text ?? '';
    if (typeof text !== 'string') throw new InvalidInputError(`text must be a string; received ${describe(text)}`);
    if (!record.input.stdin) {
      throw new InvalidInputError(`job ${id} was started without a stdin pipe, so its stdin is /dev/null; start it with stdin: true to write to it`);
    }
    const supervisor = this.supervisor;
    if (!isLive(record) || !supervisor || supervisor.pid !== record.supervisorPid) {
      throw new InvalidInputError(`job ${id} is not running (${record.state}); nothing reads its stdin any more`);
    }
    return this.pinned(record, async () => {
      await supervisor.request({ type: 'write', job: id, data: Buffer.from(text), close: options.close === true });
      return this.readReport(record, TAIL_READ, undefined);
    });
  }

  private armTimeout(record: JobRecord): void {
    const ms = record.input.timeoutMs;
    if (!ms) return;
    record.timeoutTimer = setTimeout(() => {
      record.timeoutTimer = null;
      if (!isActive(record)) return;
      record.timedOut = true;
      this.kill(record.id).catch(() => undefined);
    }, ms);
    record.timeoutTimer.unref();
  }

  /** The resources job `id` holds (empty once released, or if it never asked for any). */
  heldResources(id: number): NormalizedResource[] {
    const record = this.find(id);
    return record.lease && !record.lease.released ? [...record.lease.resources] : [];
  }

  private assertBelowCap(except?: JobRecord): void {
    const running = [...this.records.values()].filter((record) => isActive(record) && record !== except);
    if (running.length >= this.options.maxJobs) throw new JobLimitError(this.options.maxJobs, running);
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
    this.releaseLease(record);
    this.changed();
  }

  private releaseLease(record: JobRecord): void {
    record.lease?.release();
  }

  /** The job's state and the last lines of its output (or the lines after a cursor). */
  async status(id: number, options: StatusOptions = {}): Promise<JobReport> {
    const record = this.find(id);
    const tail = integerOption('lines', options.lines, DEFAULT_TAIL_LINES, 0, 1_000_000);
    const since = options.since === undefined ? undefined : integerOption('since', options.since, -1, -1, Number.MAX_SAFE_INTEGER);
    const maxBytes = integerOption('maxBytes', options.maxBytes, DEFAULT_MAX_BYTES, 1, 16 * 1024 * 1024);
    const waitMs = options.waitMs === undefined ? undefined : integerOption('waitMs', options.waitMs, 0, 0, MAX_WAIT_MS);
    const until = options.until === undefined ? undefined : compilePattern(options.until);
    return this.pinned(record, async () => {
      const waited = waitMs === undefined ? undefined : await this.waitOn(record, waitMs, until, since);
      return this.readReport(record, { tail, since, maxBytes }, waited);
    });
  }

  private async readReport(
    record: JobRecord,
    read: { tail: number; since: number | undefined; maxBytes: number },
    waited: WaitOutcome | undefined,
  ): Promise<JobReport> {
    const output = await this.readOutput(record, read);
    return buildReport(record, output, {
      maxJobs: this.options.maxJobs,
      ...(read.since === undefined ? {} : { since: read.since }),
      ...(waited ? { waited } : {}),
    });
  }

  /**
   * Waits until the job ends or, with `until`, until an output line after `since` (default: lines
   * printed from now on) matches; at most `waitMs`. Output notifications are asked of the
   * supervisor only while someone waits, so a flood costs nothing when nobody does.
   */
  private async waitOn(record: JobRecord, waitMs: number, until: RegExp | undefined, since: number | undefined): Promise<WaitOutcome> {
    const started = Date.now();
    const deadline = started + waitMs;
    const outcome = (kind: WaitOutcome['kind'], line?: string): WaitOutcome => ({
      kind,
      waitedMs: Date.now() - started,
      ...(line === undefined ? {} : { line }),
      ...(until ? { pattern: until.source } : {}),
    });
    const ended = () => !isLive(record);
    if (!until) {
      if (!(await this.waitFor(ended, waitMs))) return outcome('timed-out');
      // The exit can be reported before the supervisor has read the last output from the pipes:
      // as after the settle window, give the drain a bounded moment before the report reads it.
      await this.waitFor(() => record.cleanedUp, DRAIN_MS);
      return outcome('ended');
    }
    const supervisor = this.supervisor;
    if (!supervisor || supervisor.pid !== record.supervisorPid || record.state === 'failed') {
      return outcome(ended() ? 'ended' : 'timed-out');
    }
    // Subscribe and take the cursor in one go, before anything the caller does after this call
    // (a job_input, say) reaches the supervisor: "from now on" means from the call.
    const subscribed = supervisor.request({ type: 'subscribe', job: record.id, on: true }).catch(() => undefined);
    const now = since === undefined ? this.readOutput(record, { tail: 0, since: undefined, maxBytes: 1 }) : null;
    await subscribed;
    try {
      let cursor = since ?? (await now)?.totalLines ?? 0;
      if (since === undefined) cursor -= 1;
      for (;;) {
        const wasEnded = ended();
        // Counted before the read: an output event that arrives with (or just after) the read's
        // reply is for lines the read may not have seen, and must wake the wait below.
        const seen = this.outputSeen.get(record.id) ?? 0;
        const output = await this.readOutput(record, { tail: 0, since: cursor, maxBytes: 4 * 1024 * 1024 });
        if (!output) return outcome(wasEnded ? 'ended' : 'timed-out');
        const match = output.lines.find((line) => until.test(line.text));
        if (match) return outcome('matched', match.text);
        cursor = output.next;
        if (wasEnded && record.cleanedUp) return outcome('ended');
        const left = deadline - Date.now();
        if (left <= 0) return outcome('timed-out');
        await this.waitFor(() => (this.outputSeen.get(record.id) ?? 0) !== seen || (ended() && record.cleanedUp), left);
      }
    } finally {
      if (!supervisor.isLost) await supervisor.request({ type: 'subscribe', job: record.id, on: false }).catch(() => undefined);
    }
  }

  /** One report (without output) per job, oldest first. */
  list(): JobReport[] {
    return [...this.records.values()].map((record) => this.report(record, null));
  }

  /** Stops the job and everything it started; resolves with its final report once all is gone. */
  async kill(id: number, options: KillOptions = {}): Promise<JobReport> {
    const record = this.find(id);
    return this.pinned(record, () => this.killRecord(record, options));
  }

  private async killRecord(record: JobRecord, options: KillOptions): Promise<JobReport> {
    const id = record.id;
    const signal = options.signal ?? 'TERM';
    if (!SIGNAL_NAMES.includes(signal)) {
      throw new InvalidInputError(`signal must be one of ${SIGNAL_NAMES.join(', ')}; received ${describe(signal)}`);
    }
    const graceMs = integerOption('graceMs', options.graceMs, this.options.killGraceMs, 0, 600_000);
    if (record.state === 'waiting') {
      // Not started: cancelling its wait is the whole stop (unless it was granted just now).
      record.abort?.abort(new Error('killed while waiting for its locks'));
      await this.waitFor(() => record.state !== 'waiting', 10_000);
    }
    // Being spawned: let the spawn land first, so the kill cannot miss it.
    if (record.state === 'starting') await this.waitFor(() => record.state !== 'starting', 30_000);
    if (!record.cleanedUp && record.state !== 'lost' && record.state !== 'failed') {
      const supervisor = this.supervisor;
      if (supervisor && supervisor.pid === record.supervisorPid) {
        try {
          const facts = (await supervisor.request({ type: 'kill', params: { job: id, signal, graceMs } })) as JobFacts;
          this.applyFacts(record, facts);
        } catch (error) {
          if (!(error instanceof SupervisorLostError)) throw error;
          await this.settledLostCleanups();
        }
      }
    }
    return this.readReport(record, TAIL_READ, undefined);
  }

  /**
   * Runs `call` with the job kept in the registry: a job that finishes during a call on it (a
   * kill's own job, typically) must not be forgotten before the call has built its report.
   */
  private async pinned<T>(record: JobRecord, call: () => Promise<T>): Promise<T> {
    this.pins.set(record, (this.pins.get(record) ?? 0) + 1);
    try {
      return await call();
    } finally {
      const left = (this.pins.get(record) ?? 1) - 1;
      if (left > 0) this.pins.set(record, left);
      else {
        this.pins.delete(record);
        // What eviction had to leave alone meanwhile is due now.
        this.evictFinished();
      }
    }
  }

  /** `/job-kill ID`: the user's cancellation. The same stop as kill, never gated (see tools). */
  userKill(id: number): Promise<JobReport> {
    return this.kill(id);
  }

  /** Containment in use (starts the supervisor to find out), signals and limits. */
  async capabilities(): Promise<Capabilities> {
    this.assertOpen();
    const supervisor = await this.ensureSupervisor();
    const hello = supervisor.hello!;
    return {
      containment: hello.containment,
      subreaper: hello.subreaper,
      supervisorPid: hello.pid,
      signals: [...SIGNAL_NAMES],
      maxJobs: this.options.maxJobs,
      limitations: containmentLimitations(hello.containment),
      limits: {
        outputLines: this.options.outputLines,
        lineBytes: this.options.lineBytes,
        outputBytes: this.options.outputBytes,
        maxCommandBytes: MAX_COMMAND_BYTES,
      },
    };
  }

  /** Ends the session: stops every job as kill does, then the supervisor. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const active = [...this.records.values()].filter((record) => !record.cleanedUp && record.state !== 'lost' && record.state !== 'failed');
    await Promise.all(active.map((record) => this.kill(record.id).catch(() => undefined)));
    if (this.starting) await this.starting.catch(() => undefined);
    await this.supervisor?.shutdown();
    this.supervisor = null;
    await this.settledLostCleanups();
  }

  /** Calls `listener` on every job event; returns the function that stops it. */
  onJobEvent(listener: (event: JobEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Diagnostics: what the running supervisor said about itself when it started. */
  get supervisorHello(): HelloReply | null {
    return this.supervisor?.hello ?? null;
  }

  /** Test hook: the running supervisor's pid, if any. */
  get supervisorPid(): number | null {
    return this.supervisor?.pid ?? null;
  }

  /** Test hook: kill the supervisor as a crash would. */
  killSupervisorForTest(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.supervisor?.kill(signal);
  }

  /** Resolves once every cleanup after a lost supervisor has finished. */
  async settledLostCleanups(): Promise<void> {
    while (this.lostCleanups.size > 0) await Promise.all([...this.lostCleanups]);
  }

  // ---------------------------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new RuntimeClosedError();
  }

  private find(id: number): JobRecord {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) {
      throw new InvalidInputError(`a job id is a whole number from 0 up; received ${describe(id)}`);
    }
    const record = this.records.get(id);
    if (!record) throw new JobNotFoundError(id, [...this.records.keys()]);
    return record;
  }

  private async ensureSupervisor(): Promise<SupervisorClient> {
    if (this.supervisor && !this.supervisor.isLost) return this.supervisor;
    this.starting ??= SupervisorClient.start(this.supervisorConfig(), {
      onEvent: (event) => this.onEvent(event),
      onLost: (error) => this.onLost(error),
    }).finally(() => {
      this.starting = null;
    });
    const client = await this.starting;
    this.supervisor = client;
    return client;
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
      output: { maxLines: o.outputLines, maxLineBytes: o.lineBytes, maxBytes: o.outputBytes, headLines: 20 },
    };
  }

  private onEvent(event: SupervisorEvent): void {
    if (event.event === 'protocol-error') return;
    const record = this.records.get(event.job);
    if (!record) return;
    if (event.event === 'output') {
      this.outputSeen.set(event.job, (this.outputSeen.get(event.job) ?? 0) + 1);
      this.changed();
      return;
    }
    if (event.event === 'exited') {
      this.applyExit(record, event.code, event.signal, event.at);
    } else if (event.event === 'done') {
      this.markCleanedUp(record);
      this.evictFinished();
    }
    this.changed();
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
    this.releaseLease(record);
    this.emit({ type: 'cleaned-up', job: record.id });
  }

  private applyFacts(record: JobRecord, facts: JobFacts): void {
    record.stats = facts.stats ?? null;
    if (facts.exit) this.applyExit(record, facts.exit.code, facts.exit.signal, facts.exit.at);
    if (facts.done) this.markCleanedUp(record);
    this.changed();
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

  private onLost(error: SupervisorLostError): void {
    const lost = this.supervisor;
    if (!lost) return;
    this.supervisor = null;
    const now = Date.now();
    const orphaned: JobRecord[] = [];
    for (const record of this.records.values()) {
      if (record.supervisorPid !== lost.pid || record.cleanedUp || record.state === 'waiting') continue;
      orphaned.push(record);
      if (isActive(record)) {
        record.state = 'lost';
        record.reason = `its supervisor died (${error.message})`;
        record.endedAt = now;
        this.emit({ type: 'lost', job: record.id });
      }
    }
    // A leader already reaped gives its pid (and so its process group id) back: only the groups of
    // leaders still running are ours to signal.
    const leftovers = orphaned.map((record) => ({ cgroup: record.cgroup, pid: record.endedAt === null || record.state === 'lost' ? record.pid : null }));
    const cleanup = cleanupLostSupervisor(lost.pid, lost.hello?.containment.cgroupRoot ?? null, leftovers)
      .catch(() => undefined)
      .then(() => {
        for (const record of orphaned) this.markCleanedUp(record);
        this.lostCleanups.delete(cleanup);
        this.changed();
      });
    this.lostCleanups.add(cleanup);
    this.changed();
    if (!this.closed) {
      const retake: Promise<void> = this.retakeHostLeases(lost).finally(() => this.lostCleanups.delete(retake));
      this.lostCleanups.add(retake);
    }
  }

  /** The host's own leases were kernel locks of the dead supervisor: take them again at once. */
  private async retakeHostLeases(lost: SupervisorClient): Promise<void> {
    try {
      const contended = await this.lockBackend.retake(lost);
      if (contended.length > 0) {
        process.emitWarning(
          `heph-jobs: the supervisor died while the host held ${contended.join(', ')}; another runtime on this machine ` +
            'took them in between, so they now exclude only this runtime\'s own calls until released',
        );
      }
    } catch {
      // No fresh supervisor could be started: the next call will say so.
    }
  }

  /** Keeps the newest `keepFinished` finished jobs; never forgets a running one. */
  private evictFinished(): void {
    const finished = [...this.records.values()].filter((record) => !isActive(record) && record.cleanedUp && !this.pins.has(record));
    const excess = finished.length - this.options.keepFinished;
    for (const record of finished.slice(0, Math.max(0, excess))) {
      this.records.delete(record.id);
      if (this.supervisor && record.supervisorPid === this.supervisor.pid) {
        this.supervisor.request({ type: 'forget', job: record.id }).catch(() => undefined);
      }
    }
  }

  private changed(): void {
    for (const waiter of [...this.changeWaiters]) waiter();
  }

  /** Resolves when `predicate` holds, re-checked on every change, or after `ms`. */
  waitFor(predicate: () => boolean, ms: number): Promise<boolean> {
    if (predicate()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (result: boolean) => {
        clearTimeout(timer);
        this.changeWaiters.delete(check);
        resolve(result);
      };
      const check = () => {
        if (predicate()) finish(true);
      };
      const timer = setTimeout(() => finish(predicate()), ms);
      this.changeWaiters.add(check);
    });
  }

  /** The settle window: a job that dies at once is reported dead, with its output. */
  private async settle(record: JobRecord): Promise<void> {
    if (this.options.settleMs === 0) return;
    const ended = await this.waitFor(() => !isActive(record), this.options.settleMs);
    // Exited within the window: give its output a moment to be drained (bounded: leftovers
    // being cleaned up must not hold the answer).
    if (ended) await this.waitFor(() => record.cleanedUp, DRAIN_MS);
  }

  private async readOutput(record: JobRecord, options: { tail: number; since: number | undefined; maxBytes: number }): Promise<OutputSnapshot | null> {
    const supervisor = this.supervisor;
    if (!supervisor || supervisor.pid !== record.supervisorPid || record.state === 'failed') return null;
    try {
      const value = (await supervisor.request({
        type: 'read',
        params: { job: record.id, tail: options.tail, ...(options.since === undefined ? {} : { since: options.since }), maxBytes: options.maxBytes },
      })) as { output: OutputSnapshot; facts: JobFacts };
      this.applyFacts(record, value.facts);
      return value.output;
    } catch (error) {
      if (error instanceof HephError && (error.code === 'ERR_SUPERVISOR_LOST' || error.code === 'ERR_JOB_NOT_FOUND')) return null;
      throw error;
    }
  }

  private report(record: JobRecord, output: OutputSnapshot | null): JobReport {
    return buildReport(record, output, { maxJobs: this.options.maxJobs });
  }
}
