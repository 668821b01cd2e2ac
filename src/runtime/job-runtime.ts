/**
 * JobRuntime: what the agent runtime embeds. It keeps the registry of jobs (numbers 0, 1, 2, ...
 * never reused), has a supervisor process do every piece of operating-system work (spawning,
 * signalling, reaping, kernel locks), and turns the supervisor's replies and events into job states
 * and reports. Input is validated here, where it enters; what flows inward is already checked.
 */
import { checkLimits, combineLimits, limitsInput } from './limits.js';
import { hasLimits } from '../protocol/limits.js';
import { HephError, InvalidInputError, RuntimeClosedError, SupervisorLostError } from '../protocol/errors.js';
import { instanceName } from '../protocol/identity.js';
import { SIGNAL_NAMES, type ContainmentMode, type LostJob, type SignalName, type SupervisorConfig, type SupervisorEvent } from '../protocol/messages.js';
import type { OutputRead } from '../protocol/output.js';
import { LockTable, normalizeResources, type LockOwner } from '../locks/index.js';
import { buildReport, type JobReport } from '../reports/report.js';
import type { KillOutcome, LockBlockerFacts } from '../facts.js';
import type { BackgroundInput, Capabilities, JobEvent, KillOptions, StatusOptions } from './api.js';
import { Changes } from './changes.js';
import { JobStates } from './job-states.js';
import { OutputReads, TAIL_READ } from './output-reads.js';
import { checkedPattern, validateCommand } from './input-checks.js';
import { JobEnvironments, type CallEnvironment } from './job-environment.js';
import { registerInternals } from './internals.js';
import { registerToolPort, type ToolRuntime } from './tool-port.js';
import { JobRegistry } from './job-registry.js';
import { capacityError, hasEnded, isRunning, newJobRecord, type JobRecord } from './job-record.js';
import { kernelLockBackend, type KernelLockBackend } from './kernel-lock-backend.js';
import { containmentLimitations, limitLimitations, inputProblem, notifyProblem, lockBreachWarning, lockDirLimitations, cancelledReason, cleanupRefusedReason, supervisorDiedReason } from '../wording/index.js';
import {
  DEFAULT_MAX_BYTES,
  DEFAULT_TAIL_LINES,
  DRAIN_MS,
  integerOption,
  MAX_COMMAND_BYTES,
  MAX_TIMEOUT_MS,
  MAX_WAIT_MS,
  MAX_PORT,
  UNTIL_WAIT_MS,
  normalizeOptions,
  OUTPUT_HEAD_LINES,
  type JobRuntimeOptions,
  type NormalizedOptions,
} from './options.js';
import type { SupervisorClient } from './supervisor-client.js';
import { SupervisorKeeper } from './supervisor-keeper.js';
import { addWatches, checkNotify, notifiedFacts, notifyInput, watchRequest, type Notify } from './notify.js';

export type { BackgroundInput, Capabilities, JobEvent, KillOptions, StatusOptions } from './api.js';

/** The reason a kill gives the wait of a job that has not started: it is cancelled, not failed. */
const STOPPED_WHILE_WAITING = new Error('stopped while it waited for its locks');

export class JobRuntime {
  private readonly options: NormalizedOptions;
  private readonly jobs: JobRegistry;
  private readonly changes = new Changes();
  private readonly states = new JobStates(this.changes);
  private readonly reads: OutputReads;
  private readonly keeper: SupervisorKeeper;
  /** The environments jobs are spawned with, and the base each supervisor holds. */
  private readonly environments = new JobEnvironments();
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
      onStarted: (client) => void this.keeper.track(this.takeOver(client)),
    });
    this.jobs = new JobRegistry(options.keepFinished, (record) => {
      const supervisor = this.keeper.current;
      if (supervisor && record.supervisor === supervisor) supervisor.tell('forget', { job: record.id });
    });
    this.reads = new OutputReads({
      supervisorOf: (record) => this.supervisorOf(record),
      changes: this.changes,
      states: this.states,
      maxJobs: options.maxJobs,
    });
    this.lockBackend = kernelLockBackend(() => this.keeper.ensure());
    this.locks = new LockTable({ backend: this.lockBackend });
    registerToolPort(this, this.toolPort());
    registerInternals(this, {
      supervisorPid: () => this.keeper.current?.pid ?? null,
      supervisorInstance: () => (this.keeper.hello ? instanceName(this.keeper.hello.instance) : null),
      supervisorHello: () => this.keeper.hello,
      killSupervisor: (signal) => this.keeper.current?.kill(signal),
      disableLockVault: () => {
        this.keeper.vaultEnabled = false;
      },
      settledLostCleanups: () => this.keeper.settled(),
      waitFor: (predicate, ms) => this.changes.until(predicate, ms),
      supervisorDiagnostics: async () => (await this.keeper.ensure()).request('diagnostics', {}),
      requestsSent: () => this.keeper.current?.requestsSent ?? 0,
      faultAtNextStart: (fault) => {
        this.keeper.nextStartEnv = { HEPH_JOBS_INJECT_FAULT: fault };
      },
    });
  }

  /**
   * Validates the options. The supervisor starts with the first call that needs it, or (option
   * `startSupervisor: 'eager'`) now, in the background: a model's first call then does not wait
   * for a Node process to boot.
   */
  static async start(options: JobRuntimeOptions = {}): Promise<JobRuntime> {
    const runtime = new JobRuntime(normalizeOptions(options));
    // A failed start is not lost: the first call that needs the supervisor starts it again and
    // reports why it failed.
    if (runtime.options.startSupervisor === 'eager') runtime.keeper.ensure().catch(() => undefined);
    return runtime;
  }

  /** The containment mode of the running supervisor; null while none runs (see capabilities()). */
  get containmentMode(): ContainmentMode | null {
    return this.keeper.hello?.containment.mode ?? null;
  }

  /** Starts `command` through the shell; answers after the settle window (earlier if it ends).
   * With `locks`, first waits (fairly, visible in list()) until it holds all of them; with
   * `answerWithinMs`, the call answers after that long with the job still waiting (it keeps its place). */
  async background(input: BackgroundInput): Promise<JobReport> {
    return this.startJob(input);
  }

  /** background, telling `onQueued` the job's id as soon as the job exists (the tools' port). */
  private async startJob(input: BackgroundInput, onQueued?: (id: number) => void): Promise<JobReport> {
    const called = Date.now();
    this.assertOpen();
    const command = validateCommand(input?.command);
    this.assertBelowCap();
    const cwd = input.cwd ?? this.options.cwd;
    // The runtime's own environment (process.env by default, as the tools pass it too) is the base.
    const callEnv = input.env ?? this.options.env;
    const env = this.environments.capture(callEnv, callEnv === this.options.env);
    const wants = normalizeResources(input.locks ?? []);
    const lockTimeoutMs = input.lockTimeoutMs === undefined ? undefined : integerOption('lockTimeoutMs', input.lockTimeoutMs, 0, 0, 2 ** 31 - 1);
    const answerWithinMs = input.answerWithinMs === undefined ? undefined : integerOption('answerWithinMs', input.answerWithinMs, 0, 0, MAX_WAIT_MS);
    const timeoutMs = input.timeoutMs === undefined ? undefined : integerOption('timeoutMs', input.timeoutMs, 0, 1, MAX_TIMEOUT_MS);
    const limits = combineLimits(this.options.limits, checkLimits('limits', input.limits));
    const waitMs = input.waitMs === undefined ? undefined : integerOption('waitMs', input.waitMs, 0, 0, MAX_WAIT_MS);
    const until = input.until === undefined ? undefined : checkedPattern(input.until);
    const untilPort = portOption(input.untilPort);
    const notify = checkNotify(input.notify);
    const id = this.jobs.takeId();
    const record = newJobRecord(id, { command, cwd, env: input.env, stdin: input.stdin === true, merge: input.merge === true, tty: input.tty === true, locks: wants, ref: input.ref, timeoutMs, limits, notify });
    this.jobs.add(record);
    this.changes.notify();
    onQueued?.(id);
    // The start goes on by itself (its outcome is the record's state), so a call that stops
    // waiting for it leaves the job its place in the queue.
    const launched = this.launch(record, input, env, lockTimeoutMs);
    if (answerWithinMs !== undefined && record.state === 'waiting') {
      await this.changes.until(() => record.state !== 'waiting', answerWithinMs);
      if (record.state === 'waiting') return this.report(record, null, Date.now() - called);
    }
    if (!(await launched)) return this.report(record, null);
    // No settle window: the caller wants the job number now; its output is one status away.
    const watches = until !== undefined || untilPort !== undefined;
    if (waitMs === undefined && !watches && this.options.settleMs === 0) return this.report(record, null);
    // The call waits at most `waitMs` in all: the time its locks took counts.
    const left = waitMs === undefined ? undefined : Math.max(0, waitMs - (wants.length > 0 ? Date.now() - called : 0));
    return this.jobs.pinned(record, async () => {
      if (left === undefined && !watches) {
        await this.settle(record);
        return this.reads.report(record, TAIL_READ);
      }
      // A dev server's ready line may already be out: the wait matches from the first line on.
      return this.reads.report(record, TAIL_READ, { ms: left ?? UNTIL_WAIT_MS, until, from: -1, port: untilPort });
    });
  }

  /**
   * Takes the job's locks (waiting fairly, visible in list()), then spawns it. Resolves true once
   * it runs, false when it did not start: its record then says why (failed, or cancelled while
   * it waited). Never rejects.
   */
  private async launch(record: JobRecord, input: BackgroundInput, env: CallEnvironment, lockTimeoutMs: number | undefined): Promise<boolean> {
    const { id, command, wants } = record;
    try {
      if (wants.length > 0) {
        const abort = new AbortController();
        record.abort = abort;
        const signal = input.signal ? AbortSignal.any([input.signal, abort.signal]) : abort.signal;
        const owner: LockOwner = { label: command, kind: 'job', jobId: id, ...(input.ref ? { ref: input.ref } : {}) };
        record.blockedBy = () => this.blockersOf(id);
        const lease = this.locks.acquire(owner, wants, { signal, ...(lockTimeoutMs === undefined ? {} : { timeoutMs: lockTimeoutMs }) });
        try {
          record.lease = await lease;
        } catch (error) {
          const code = error instanceof HephError ? error.code : null;
          if (code !== 'ERR_LOCK_CANCELLED' && code !== 'ERR_LOCK_TIMEOUT') throw error;
          const how = abort.signal.reason === STOPPED_WHILE_WAITING ? 'stopped' : code === 'ERR_LOCK_TIMEOUT' ? 'timed-out' : 'cancelled';
          this.states.cancelled(record, cancelledReason(how, (error as Error).message, wants));
          return false;
        }
        record.abort = null;
        record.blockedBy = undefined;
        // Others may have started while we waited: the cap is checked again, holding nothing if refused.
        this.assertBelowCap(record);
        record.state = 'starting';
        record.startedAt = Date.now();
        this.changes.notify();
      }
      const supervisor = await this.keeper.ensure();
      record.supervisor = supervisor;
      record.containment = supervisor.hello?.containment.mode ?? null;
      const environment = this.environments.fieldsFor(supervisor, env);
      const spawned = supervisor.request('spawn', {
        params: {
          job: id,
          command,
          cwd: record.cwd,
          ...environment.fields,
          stdin: input.stdin === true,
          merge: input.merge === true,
          tty: input.tty === true,
          shell: this.options.shell,
          ...(hasLimits(record.input.limits) ? { limits: record.input.limits } : {}),
          ...(record.watches.length > 0 ? { notify: record.watches.map((spec, index) => watchRequest(spec, index)) } : {}),
        },
      });
      // A base sent just before is answered first: its failure is the one reported.
      const reply = environment.sent ? (await Promise.all([environment.sent, spawned]))[1] : await spawned;
      record.pid = reply.pid;
      record.pidStart = reply.start;
      record.cgroup = reply.cgroup;
      record.startedAt = reply.startedAt;
      this.states.started(record);
      this.armTimeout(record);
      return true;
    } catch (error) {
      this.states.failed(record, error);
      return false;
    }
  }

  /** What stands in the way of job `id`'s locks now, as the lock table sees it. */
  private blockersOf(id: number): LockBlockerFacts[] {
    const waiter = this.locks.snapshot().waiters.find((entry) => entry.owner.kind === 'job' && entry.owner.jobId === id);
    return (waiter?.blockedBy ?? []).map(({ owner, holding, resource, wants }) => ({
      owner: { ...owner },
      holding,
      resource: { resource: resource.resource, mode: resource.mode },
      wants: { resource: wants.resource, mode: wants.mode },
    }));
  }

  /** Stops the job and starts its command again with the same options, as a new job
   * (`answerWithinMs`: as background's, for a job with locks). */
  async restart(id: number, options: Pick<BackgroundInput, 'answerWithinMs'> = {}): Promise<{ stopped: JobReport; started: JobReport }> {
    const record = this.jobs.find(id);
    const stopped = await this.kill(id);
    const { input } = record;
    const started = await this.background({
      command: input.command,
      cwd: input.cwd,
      ...(input.env ? { env: input.env } : {}),
      stdin: input.stdin,
      merge: input.merge,
      tty: input.tty,
      locks: input.locks,
      ...(input.ref ? { ref: input.ref } : {}),
      ...(input.timeoutMs ? { timeoutMs: input.timeoutMs } : {}),
      limits: limitsInput(input.limits),
      notify: record.watches.map(notifyInput),
      ...(options.answerWithinMs === undefined ? {} : { answerWithinMs: options.answerWithinMs }),
    });
    return { stopped, started };
  }

  /** Writes `text` to the job's stdin (started with `stdin: true`), and closes it with `close`. */
  async input(id: number, options: { text?: string; close?: boolean }): Promise<JobReport> {
    const record = this.jobs.find(id);
    const text = options.text ?? '';
    if (typeof text !== 'string') throw new InvalidInputError(inputProblem.textNotAString(text));
    if (!record.input.stdin && !record.input.tty) {
      throw new InvalidInputError(inputProblem.noStdinPipe(id));
    }
    const supervisor = this.supervisorOf(record);
    if (hasEnded(record) || !supervisor) {
      throw new InvalidInputError(inputProblem.stdinNotRead(id, record.state));
    }
    return this.jobs.pinned(record, async () => {
      const close = options.close === true;
      const reply = await supervisor.request('write', { job: id, data: Buffer.from(text), close });
      this.states.apply(record, reply.facts);
      return this.reads.report(record, TAIL_READ, undefined, undefined, { ...reply.input, ...(close ? { closed: reply.closed } : {}) });
    });
  }

  /** The job's state and the last lines of its output (or the lines after a cursor). */
  async status(id: number, options: StatusOptions = {}): Promise<JobReport> {
    const record = this.jobs.find(id);
    const tail = integerOption('lines', options.lines, DEFAULT_TAIL_LINES, 0, 1_000_000);
    const since = options.since === undefined ? undefined : integerOption('since', options.since, -1, -1, Number.MAX_SAFE_INTEGER);
    const filter = options.filter === undefined ? undefined : checkedPattern(options.filter, 'filter');
    // With since, lines is a page size; a filtered page has the default size when none is given.
    const limit = options.lines !== undefined || filter !== undefined ? tail : undefined;
    const maxBytes = integerOption('maxBytes', options.maxBytes, DEFAULT_MAX_BYTES, 1, this.options.maxReadBytes);
    const until = options.until === undefined ? undefined : checkedPattern(options.until);
    const port = portOption(options.untilPort);
    const watches = until !== undefined || port !== undefined;
    const waitMs = options.waitMs === undefined ? (watches ? UNTIL_WAIT_MS : undefined) : integerOption('waitMs', options.waitMs, 0, 0, MAX_WAIT_MS);
    const wait = waitMs === undefined ? undefined : { ms: waitMs, until, from: since, port };
    return this.jobs.pinned(record, () => this.reads.report(record, { tail, since, maxBytes, limit, filter }, wait));
  }

  /**
   * Adds notify watches to a job that has not ended: each new line that matches, or a listener on
   * the port, is told as a `notified` job event (and to the tools' model, on its next answer).
   * A job still waiting for its locks starts with them.
   */
  async notify(id: number, notify: Notify | readonly Notify[]): Promise<void> {
    const record = this.jobs.find(id);
    const specs = checkNotify(notify);
    if (hasEnded(record)) throw new InvalidInputError(notifyProblem.ended(id, record.state));
    const first = record.watches.length;
    const fresh = addWatches(id, record.watches, specs);
    if (fresh.length === 0 || record.state === 'waiting') return;
    // A spawn under way carries the watches it was sent with: these go once it is answered.
    await this.changes.until(() => record.pid !== null || hasEnded(record), MAX_WAIT_MS);
    const supervisor = this.supervisorOf(record);
    if (!supervisor || hasEnded(record)) throw new InvalidInputError(notifyProblem.ended(id, record.state));
    await Promise.all(fresh.map((spec, index) => supervisor.request('notify', { job: id, watch: watchRequest(spec, first + index) })));
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

  /** Containment in use (starts the supervisor to find out), signals and limits. */
  async capabilities(): Promise<Capabilities> {
    this.assertOpen();
    const supervisor = await this.keeper.ensure();
    const hello = supervisor.hello!;
    const limitMechanisms = await supervisor.request('limit-mechanisms', {});
    return {
      containment: hello.containment,
      subreaper: hello.subreaper,
      supervisorPid: hello.pid,
      signals: [...SIGNAL_NAMES],
      maxJobs: this.options.maxJobs,
      limitations: [...containmentLimitations(hello.containment), ...limitLimitations(limitMechanisms, this.options.allJobsMemoryBytes), ...lockDirLimitations(hello.locks)],
      limits: {
        outputLines: this.options.outputLines,
        lineBytes: this.options.lineBytes,
        outputBytes: this.options.outputBytes,
        maxCommandBytes: MAX_COMMAND_BYTES,
        maxReadBytes: this.options.maxReadBytes,
      },
      jobLimits: { host: limitsInput(this.options.limits), by: limitMechanisms, allJobsMemoryBytes: this.options.allJobsMemoryBytes },
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

  /** What the tools ask beyond the public calls (src/runtime/tool-port.ts). */
  private toolPort(): ToolRuntime {
    const heldBy = (record: JobRecord) => (record.lease && !record.lease.released ? [...record.lease.resources] : []);
    return {
      settings: this.options,
      locks: this.locks,
      background: (input, onQueued) => this.startJob(input, onQueued),
      status: (id, options) => this.status(id, options),
      list: () => this.list(),
      kill: (id, options) => this.kill(id, options),
      userKill: (id) => this.kill(id),
      input: (id, options) => this.input(id, options),
      restart: (id, options) => this.restart(id, options),
      notify: (id, notify) => this.notify(id, notify),
      totalLines: (id) => this.jobs.get(id)?.totalLines ?? null,
      onJobEvent: (listener) => this.onJobEvent(listener),
      job: (id) => {
        const record = this.jobs.get(id);
        return record === undefined ? undefined : this.report(record, null);
      },
      jobIds: () => this.jobs.all().map((record) => record.id),
      running: () => this.jobs.all().filter(isRunning),
      held: (id) => heldBy(this.jobs.find(id)),
      wanted: (id) => {
        const record = this.jobs.find(id);
        return record.state === 'waiting' ? [...record.wants] : [];
      },
    };
  }

  /** Calls `listener` on every job event; returns the function that stops it. */
  onJobEvent(listener: (event: JobEvent) => void): () => void {
    return this.states.listen(listener);
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
    return supervisor && !supervisor.isLost && supervisor === record.supervisor ? supervisor : null;
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

  private async stop(record: JobRecord, signal: SignalName, graceMs: number): Promise<JobReport> {
    // Ended before this call: the report says so, rather than look like the call stopped it.
    const endedBefore: KillOutcome | undefined = hasEnded(record) ? { kind: 'ended', leftovers: !record.cleanedUp } : undefined;
    if (record.state === 'waiting') {
      // Not started: cancelling its wait is the whole stop (unless it was granted just now).
      record.abort?.abort(STOPPED_WHILE_WAITING);
      await this.changes.until(() => record.state !== 'waiting', 10_000);
    }
    // Being spawned: let the spawn land first, so the kill cannot miss it.
    if (record.state === 'starting') await this.changes.until(() => record.state !== 'starting', 30_000);
    // The kill's reply carries the final read, so a job the call stops is reported in one round trip.
    let output: OutputRead | undefined;
    if (!record.cleanedUp && record.state !== 'lost' && record.state !== 'failed') {
      const supervisor = this.supervisorOf(record);
      if (supervisor) {
        try {
          const read = { tail: TAIL_READ.tail, maxBytes: TAIL_READ.maxBytes };
          const reply = await supervisor.request('kill', { params: { job: record.id, signal, graceMs, read } });
          this.states.apply(record, reply.facts);
          output = reply.output;
        } catch (error) {
          if (!(error instanceof SupervisorLostError)) throw error;
          await this.keeper.settled();
        }
      }
    }
    const outlivedInt: KillOutcome | undefined =
      signal === 'INT' && isRunning(record) ? { kind: 'outlived-int', graceMs, nextGraceMs: this.options.killGraceMs } : undefined;
    const outcome = endedBefore ?? outlivedInt;
    return output ? this.reads.reportOf(record, output, TAIL_READ, { ...(outcome ? { kill: outcome } : {}) }) : this.reads.report(record, TAIL_READ, undefined, outcome);
  }

  /** The settle window: a job that dies at once is reported dead, with its output. */
  private async settle(record: JobRecord): Promise<void> {
    if (this.options.settleMs === 0) return;
    const ended = await this.changes.until(() => !isRunning(record), this.options.settleMs);
    // Exited within the window: give its output a moment to be drained (bounded: leftovers
    // being cleaned up must not hold the answer).
    if (ended) await this.changes.until(() => record.cleanedUp, DRAIN_MS);
  }

  private report(record: JobRecord, output: OutputRead | null, lockWaitMs?: number): JobReport {
    return buildReport(record, output, { maxJobs: this.options.maxJobs, ...(lockWaitMs === undefined ? {} : { lockWaitMs }) });
  }

  private supervisorConfig(): SupervisorConfig {
    const o = this.options;
    return {
      containment: o.containment,
      cgroupParent: o.cgroupParent,
      lockDir: o.lockDir,
      ...(o.testing === null ? {} : { testing: o.testing }),
      killGraceMs: o.killGraceMs,
      ...(o.allJobsMemoryBytes === null ? {} : { allJobsMemoryBytes: o.allJobsMemoryBytes }),
      drainMs: DRAIN_MS,
      output: { maxLines: o.outputLines, maxLineBytes: o.lineBytes, maxBytes: o.outputBytes, headLines: OUTPUT_HEAD_LINES },
    };
  }

  private onEvent(event: SupervisorEvent): void {
    if (event.event === 'protocol-error') return;
    const record = this.jobs.get(event.job);
    if (!record) return;
    if (event.event === 'notified') {
      const spec = record.watches[event.watch];
      if (spec) this.states.notified(record, notifiedFacts(spec, event));
      return;
    }
    // A cleanup may carry the exit (both in one turn of the supervisor): the exit is applied first.
    const exit = event.event === 'exited' ? event : event.exit;
    const limits = (event.event === 'cleaned-up' ? event.limits : undefined) ?? exit?.limits;
    if (limits) record.limits = limits;
    if (exit) this.states.exited(record, exit.code, exit.signal, exit.at);
    if (event.event === 'cleaned-up') {
      record.totalLines = event.lines;
      this.states.cleanedUp(record);
      this.jobs.evictFinished();
    }
    this.changes.notify();
  }

  /**
   * The supervisor died: its running jobs are lost. A fresh supervisor stops what is left of them
   * (this process never signals a job itself), and the host's own leases are taken again there.
   */
  private onLost(dead: SupervisorClient, error: SupervisorLostError): void {
    const now = Date.now();
    const orphaned = this.jobs.all().filter((record) => record.supervisor === dead && !record.cleanedUp && record.state !== 'waiting');
    for (const record of orphaned) this.states.lost(record, error, now);
    // A leader already reaped gives its pid (and so its process group id) back: only the groups of
    // leaders still running are ours to signal.
    const leftovers: LostJob[] = orphaned.map((record) => {
      const leader = record.endedAt === null || record.state === 'lost';
      return { cgroup: record.cgroup, pid: leader ? record.pid : null, start: leader ? record.pidStart : null };
    });
    // Reported cleaned up only once a supervisor did it (each new one takes over what is owed).
    void this.keeper.oweCleanup(dead, leftovers).then((refused) => {
      for (const record of orphaned) {
        if (refused) record.reason = cleanupRefusedReason(record.reason ?? supervisorDiedReason(refused.message), refused.message);
        else this.states.cleanedUp(record);
      }
      this.changes.notify();
    });
    this.changes.notify();
  }

  /**
   * A supervisor came up: the leases lost supervisors held move to it (kept all along in the lock
   * vault, or, when not, taken again), and are reported when another runtime could have had them.
   */
  private async takeOver(client: SupervisorClient): Promise<void> {
    const { open, contended } = await this.lockBackend.takeOver(client);
    if (open.length > 0) process.emitWarning(lockBreachWarning(open, contended), { code: 'HEPH_JOBS_LOCK_BREACH' });
  }
}

/** `untilPort`: a TCP port, 1 to 65535. */
function portOption(value: number | undefined): number | undefined {
  return value === undefined ? undefined : integerOption('untilPort', value, 0, 1, MAX_PORT);
}
