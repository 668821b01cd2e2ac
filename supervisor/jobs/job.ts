/**
 * One job as the supervisor sees it: its leader, its output ring, and its life as one phase
 * (JobPhase) from "running" through "exited" and "cleaned up" (every process gone and reaped, the
 * cgroup removed) to "drained" (the last output read). Spawning the leader is job-spawn.ts's; reading
 * the pipes is job-output.ts's.
 */
import { constants as os } from 'node:os';
import { native } from '../native.js';
import { InvalidInputError } from '../../src/protocol/errors.js';
import type { InputWrite, JobFacts, KillParams, SignalName, SpawnParams, SpawnReply, SupervisorConfig } from '../../src/protocol/messages.js';
import type { ContainmentStrategy, JobIdentity } from '../containment/index.js';
import { OutputRing, type ReadOptions, type OutputRead } from '../output/index.js';
import type { OutputLine } from '../../src/protocol/output.js';
import type { WatchableJob } from './notify-watch.js';
import type { MeteredJob } from '../limits/all-jobs.js';
import { jobMarker } from '../names.js';
import { PortProbe } from '../platform/ports.js';
import { stopAbandoned } from './abandon.js';
import { injectFault } from './faults.js';
import { hasUnreapedChildren } from './zombies.js';
import type { JobLimitHold } from '../limits/job-limits.js';
import { NO_LIMITS, type LimitFacts } from '../../src/protocol/limits.js';
import { pipeInput, terminalInput, type JobInput } from './job-input.js';
import { JobTerminal, type Terminal } from './terminal.js';
import { JobOutput } from './job-output.js';
import { spawnError, spawnFailure, spawnJobLeader, type SpawnedLeader } from './job-spawn.js';
import { jobMemoryBytes, jobStats } from './stats.js';
import { onHostBootClock } from '../platform/procfs.js';
import { KeptFiles, KeptMemberFiles } from '../platform/kept-files.js';
import { room, SPAWN_DESCRIPTORS } from '../platform/descriptors.js';

const SIGNALS: Record<SignalName, number> = { INT: os.signals.SIGINT, TERM: os.signals.SIGTERM, KILL: os.signals.SIGKILL };
const SIGCONT = os.signals.SIGCONT;

/** Signal number to name ("SIGTERM"), for reports. */
export function signalName(signal: number): string {
  for (const [name, value] of Object.entries(os.signals)) if (value === signal) return name;
  return `signal ${signal}`;
}

export interface JobHooks {
  onExited(job: SupervisedJob): void;
  onDone(job: SupervisedJob): void;
}

/** How soon a cgroup that could not be removed yet (EBUSY) is tried again. */
const RELEASE_RETRY_MS = 2;

/** Bound on one scan of new lines by a waiting read (it reads on from where it stopped). */
const WAIT_SCAN_BYTES = 4 * 1024 * 1024;

/**
 * A job's life, one phase after the other and never back (s6's state table is the model):
 * `running` until the reaper reports its leader; `exited` while what the leader left is stopped
 * and reaped; `cleaned-up` once every process is gone and its cgroup removed, while its last
 * output is read; `drained` once that is read too. Only `enter` moves a job on.
 */
export type JobPhase = 'running' | 'exited' | 'cleaned-up' | 'drained';
const PHASES: readonly JobPhase[] = ['running', 'exited', 'cleaned-up', 'drained'];

export class SupervisedJob implements WatchableJob, MeteredJob {
  readonly id: number;
  readonly ring: OutputRing;
  readonly identity: JobIdentity;
  /** The leader's end, from the reaper (set as the job enters `exited`). */
  exit: { code: number | null; signal: string | null; at: number } | null = null;
  private phase: JobPhase = 'running';
  private readonly output: JobOutput;
  private stdin: JobInput | null = null;
  private pidfd = -1;
  private stopWatching: () => void = () => {};
  private drainWaiters: (() => void)[] = [];
  private cleanup: Promise<void> | null = null;
  private checking = false;
  private checkScheduled = false;
  /** A stop with SIGKILL is under way: a later TERM stop (the leader's exit) adds nothing. */
  private killing = false;
  private readonly hadStdin: boolean;
  /** Waiting reads (requests/read-wait.ts), woken on new output, on the leader's exit and on completion. */
  private readonly changeListeners = new Set<() => void>();
  private wakeScheduled = false;
  /** A limit stops it (its own, or that of all jobs: then what all jobs used). */
  private reachedOwnLimit = false;
  private allJobsStop: { limitBytes: number; totalBytes: number; jobBytes: number } | null = null;

  private constructor(
    params: SpawnParams,
    private readonly strategy: ContainmentStrategy,
    private readonly config: SupervisorConfig,
    private readonly hooks: JobHooks,
    readonly reply: SpawnReply,
    spawned: { pidfd: number; stdin: number; stdout: number; stderr: number },
    terminal: Terminal | null,
    private readonly limits: JobLimitHold | null,
  ) {
    this.id = params.job;
    this.ring = new OutputRing(config.output);
    this.identity = {
      job: params.job,
      pid: reply.pid,
      marker: jobMarker(params.job),
      cgroup: reply.cgroup,
      pidfd: spawned.pidfd,
      ...(reply.cgroup ? { files: new KeptFiles(reply.cgroup) } : {}),
      memberFiles: new KeptMemberFiles(),
    };
    this.pidfd = spawned.pidfd;
    this.hadStdin = spawned.stdin >= 0 || terminal !== null;
    this.output = new JobOutput(this.ring, () => this.changedSoon(), spawned, terminal !== null);
  }

  /** Every process of the job is gone and reaped, its cgroup removed (the runtime's `cleanedUp`). */
  get cleanedUp(): boolean {
    return this.phase === 'cleaned-up' || this.phase === 'drained';
  }

  /** The leader has ended (its exit is known). */
  get ended(): boolean {
    return this.phase !== 'running';
  }

  /** Cleaned up, and the last output read: nothing more will come. */
  get drained(): boolean {
    return this.phase === 'drained';
  }

  /**
   * Moves the job on to phase `next` and does what entering it means; false (and nothing done)
   * when the job is there or past it already.
   */
  private enter(next: JobPhase): boolean {
    if (PHASES.indexOf(next) <= PHASES.indexOf(this.phase)) return false;
    this.phase = next;
    if (next === 'exited') this.onExited();
    else if (next === 'cleaned-up') this.onCleanedUp();
    else this.onDrained();
    return true;
  }

  /**
   * The steps after the spawn that the reply waits for, each of which may fail (a socket on the
   * stdin pipe, the watch that meets inotify's limit). On a failure the stdin pipe is closed here
   * if it was not wrapped yet; the rest is discard's.
   */
  private setUp(spawned: { stdin: number }, terminal: Terminal | null): void {
    const unwrapped = new Set([spawned.stdin, terminal?.master ?? -1].filter((fd) => fd >= 0));
    try {
      if (terminal) {
        // One stream, in the order the job wrote it; the master is also the job's input.
        const stream = this.output.attachTerminal(new JobTerminal(terminal), terminal.master);
        unwrapped.delete(terminal.master);
        this.stdin = terminalInput(terminal.master, () => !stream.destroyed);
      }
      if (spawned.stdin >= 0) this.stdin = pipeInput(spawned.stdin);
      unwrapped.delete(spawned.stdin);
      injectFault('job-watch');
      this.stopWatching = this.strategy.watch(this.identity, () => this.poke());
      this.limits?.watch(this.strategy, this.identity, () => this.stopAtLimit());
    } catch (error) {
      for (const fd of unwrapped) native.closeFd(fd);
      if (terminal && !this.output.terminal) native.closeFd(terminal.slave);
      throw error;
    }
  }

  /** A limit that stops the job was reached: every process is killed now, with no grace. */
  private stopAtLimit(): void {
    this.reachedOwnLimit = true;
    if (this.cleanedUp) return;
    if (this.cleanup) this.strategy.killAll(this.identity);
    else this.cleanup = this.stop('KILL', 0);
  }

  /** After the spawn's reply: the output pipes wrapped (job-output.ts); a job whose wrap failed is stopped. */
  private wrapOutputs(): void {
    if (!this.output.wrap(this.drained)) this.cleanup ??= this.stop('KILL', 0);
  }

  /** A job whose setup failed: its pipes closed, every process killed and reaped, its cgroup gone. */
  private discard(): Promise<void> {
    this.output.discard();
    this.stdin?.destroy();
    this.stdin = null;
    this.output.terminal?.closeSlave();
    const pidfd = this.pidfd;
    this.pidfd = -1;
    this.limits?.stop();
    return stopAbandoned(this.id + 1, this.identity, this.strategy, pidfd).finally(() => {
      this.closeKeptFiles();
      this.limits?.release();
    });
  }

  /**
   * Spawns the leader and sets the job up; `register` is given the job as soon as it exists, in
   * the same turn as the spawn's result, so that the reaper's report of the leader finds it.
   * Rejects with SpawnError, and nothing is left behind: when the spawn fails, the cgroup is
   * removed; when a later step fails, the leader and all it started are killed and reaped first,
   * and every descriptor is closed. `env` is the job's environment as the spawn's fields give it
   * (supervisor/jobs/environment.ts).
   */
  static start(
    params: SpawnParams,
    env: readonly string[],
    strategy: ContainmentStrategy,
    config: SupervisorConfig,
    hooks: JobHooks,
    register: (job: SupervisedJob) => void,
  ): Promise<SupervisedJob> {
    try {
      // A spawn that would leave no descriptors for kills and cleanup is refused before it begins.
      room(`the start of job ${params.job}`, SPAWN_DESCRIPTORS);
    } catch (error) {
      return Promise.reject(spawnFailure(error, params));
    }
    return new Promise((resolve, reject) => {
      spawnJobLeader(params, env, strategy, config, (error, leader) => {
        try {
          if (error || !leader) reject(error);
          else SupervisedJob.setUpSpawned(params, strategy, config, hooks, leader, register).then(resolve, reject);
        } catch (failure) {
          reject(failure);
        }
      });
    });
  }

  /**
   * The job of a leader just spawned. Up to `register` this runs in the turn of the spawn's
   * result, before the reaper's report of the leader can come (a setup that fails has the discard
   * listen for it in that turn too).
   */
  private static async setUpSpawned(
    params: SpawnParams,
    strategy: ContainmentStrategy,
    config: SupervisorConfig,
    hooks: JobHooks,
    leader: SpawnedLeader,
    register: (job: SupervisedJob) => void,
  ): Promise<SupervisedJob> {
    const { spawned, cgroup, terminal, limits } = leader;
    const reply: SpawnReply = { pid: spawned.pid, start: spawned.start === null ? null : onHostBootClock(spawned.start), cgroup, method: spawned.method, startedAt: Date.now() };
    const job = new SupervisedJob(params, strategy, config, hooks, reply, spawned, terminal, limits);
    try {
      job.setUp(spawned, terminal);
    } catch (error) {
      await job.discard();
      throw spawnError(`the job started but could not be set up, so it was stopped: ${(error as Error).message}`, error);
    }
    register(job);
    setImmediate(() => {
      job.wrapOutputs();
      strategy.prepareNext();
    });
    return job;
  }

  /** Its limits and what they did, when it has any (or the limit of all jobs stopped it). */
  get limitFacts(): LimitFacts | null {
    const own = this.limits?.facts() ?? null;
    if (this.allJobsStop === null) return own;
    const { limitBytes, totalBytes, jobBytes } = this.allJobsStop;
    const base = own ?? { set: NO_LIMITS, by: { memory: null, processes: null, cpu: null }, reached: null, peakMemoryBytes: null, forkFailures: null, throttledMs: null };
    return { ...base, reached: base.reached ?? 'all-jobs-memory', peakMemoryBytes: Math.max(base.peakMemoryBytes ?? 0, jobBytes), allJobs: { limitBytes, totalBytes } };
  }

  /** Its memory now, for the limit of all jobs (supervisor/limits/all-jobs.ts); null once stopping or done. */
  memoryForAllJobs(): number | null {
    if (this.cleanedUp || this.allJobsStop !== null || this.reachedOwnLimit) return null;
    return jobMemoryBytes(this.identity, this.strategy.members(this.identity));
  }

  /** All jobs together went past their memory limit and this one used the most: it is stopped whole, now. */
  stopForAllJobs(sample: { limitBytes: number; totalBytes: number; jobBytes: number }): void {
    this.allJobsStop = sample;
    this.stopAtLimit();
  }

  /** What the job is now; `withStats` adds its resources (a /proc and cgroup read). */
  facts(withStats = false): JobFacts {
    const members = this.cleanedUp ? [] : this.strategy.members(this.identity);
    return {
      job: this.id,
      pid: this.identity.pid,
      cgroup: this.identity.cgroup,
      exit: this.exit,
      cleanedUp: this.cleanedUp,
      procs: members.length,
      stdinOpen: this.stdin !== null,
      stats: withStats && !this.cleanedUp ? jobStats(this.strategy, this.identity, members) : null,
      limits: this.limitFacts,
    };
  }

  read(options: ReadOptions): OutputRead {
    return this.ring.read(options);
  }

  /** The reaper reaped our leader. The job's state follows it; what it left behind is cleaned up. */
  leaderReaped(code: number | null, signal: number): void {
    this.identity.leaderReaped = true;
    const at = Date.now();
    // What the leader wrote before it exited is in the pipes already, but the reap may be handled
    // before the loop has polled the pipes since (the reaper's queue is drained in one go): after
    // the next poll phase (an immediate scheduled from an immediate) it is in the ring, so the
    // exit is never reported ahead of the output that preceded it. Pipes already at end of file
    // hold nothing more: then the exit is handled now (the usual case for a job whose processes
    // are all gone: the kernel closed the pipes before the reaper saw the exit).
    (this.output.ended ? (fn: () => void) => fn() : afterNextPoll)(() => {
      const limits = this.limitFacts;
      this.exit = { code, signal: signal ? signalName(signal) : null, at, ...(limits ? { limits } : {}) };
      this.enter('exited');
    });
  }

  /** Entering `exited`: the pidfd closed, the exit told, what the leader left stopped. */
  private onExited(): void {
    if (this.pidfd >= 0) {
      this.identity.pidfd = -1;
      native.closeFd(this.pidfd);
      this.pidfd = -1;
    }
    this.hooks.onExited(this);
    this.changedNow();
    if (!this.cleanup) this.cleanup = this.stop('TERM', this.config.killGraceMs);
    // The job may have emptied while its exit was deferred (a check then returns early, as the
    // leader had not been recorded yet), and nothing else would look again.
    else this.poke();
  }

  /**
   * Something changed that may have emptied the job (a reap, a cgroup event). Checks are
   * coalesced to one per event-loop turn: a crash cleanup reaps hundreds of processes at once,
   * and each check reads /proc.
   */
  poke(): void {
    if (this.checkScheduled || this.cleanedUp) return;
    this.checkScheduled = true;
    setImmediate(() => {
      this.checkScheduled = false;
      this.checkDone();
    });
  }

  /** job_kill: signal, grace, escalate, and resolve when the job is cleaned up. INT does not escalate. */
  async kill(params: Pick<KillParams, 'signal' | 'graceMs'>): Promise<void> {
    if (!this.cleanedUp) {
      if (params.signal === 'INT') {
        this.strategy.signalAll(this.identity, SIGNALS.INT);
        await this.waitDone(params.graceMs);
      } else {
        this.cleanup = this.stop(params.signal, params.graceMs);
        await this.cleanup;
      }
    }
  }

  /**
   * Runtime gone, first step: SIGKILL to every process of the job, now. The shutdown sends every
   * job's kill before it waits for any (a crash cleanup of 8 jobs otherwise spent milliseconds of
   * first-run code between the kills); `destroy` then waits. `alreadySent`: the strategy has
   * killed every job at once (its killEveryJob), so only the state is set here.
   */
  killNow(alreadySent = false): void {
    if (this.cleanedUp || this.killing) return;
    this.killing = true;
    if (!alreadySent) this.strategy.killAll(this.identity);
  }

  /** Runtime gone: no grace, every process now (unless `killNow` sent it), then cleaned up. */
  destroy(): Promise<void> {
    if (this.cleanedUp) return Promise.resolve();
    this.killNow();
    this.cleanup = this.untilGone();
    return this.cleanup;
  }

  /** Writes to the job's stdin pipe; resolves once the bytes are in the pipe (or the reader is gone). */
  async write(data: Uint8Array, close: boolean): Promise<{ input: InputWrite; closed: boolean }> {
    const stdin = this.stdin;
    if (!stdin) {
      throw new InvalidInputError(
        this.hadStdin
          ? `job ${this.id}'s stdin is already closed`
          : `job ${this.id} was started without a stdin pipe, so its stdin is /dev/null; start it with stdin: true to write to it`,
      );
    }
    if (this.cleanedUp || stdin.destroyed) throw new InvalidInputError(`job ${this.id} has ended; nothing reads its stdin any more`);
    const input = await stdin.write(data);
    let closed = false;
    if (close) {
      this.stdin = null;
      closed = await stdin.end();
    }
    return { input, closed };
  }

  get lineCount(): number {
    return this.ring.lineCount;
  }

  readLines(since: number): OutputRead {
    return this.ring.read({ tail: 0, since, maxBytes: WAIT_SCAN_BYTES });
  }

  /** A check, bounded in cost, of whether a process of the job listens on TCP `port` (platform/ports.ts). */
  portCheck(port: number): () => boolean {
    const probe = new PortProbe(port);
    return () => !this.ended && probe.check(this.identity.pid, () => this.strategy.members(this.identity));
  }

  /** Calls `tap` with each line completed from now on, as it is ingested (notify watches). */
  onLine(tap: (line: OutputLine) => void): () => void {
    return this.ring.tap(tap);
  }

  onChange(wake: () => void): () => void {
    this.changeListeners.add(wake);
    return () => this.changeListeners.delete(wake);
  }

  /** Wakes the waiting reads now (an exit or the completion: rare, and worth answering at once). */
  private changedNow(): void {
    for (const wake of [...this.changeListeners]) wake();
  }

  /**
   * Wakes the waiting reads after this event-loop turn's poll phase: a flood's many reads cost one
   * scan, and an answer holds what every stream of the job had ready in this turn (woken in a read's
   * own callback, it would miss a stderr line that libuv reads after the stdout line matched).
   */
  private changedSoon(): void {
    if (this.changeListeners.size === 0 || this.wakeScheduled) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      this.changedNow();
    });
  }

  private async stop(signal: 'TERM' | 'KILL', graceMs: number): Promise<void> {
    if (signal === 'KILL') this.killing = true;
    // A job the CPU watchdog froze could not act on its TERM within the grace.
    this.limits?.thawForGood();
    // A job already empty (the usual end: the leader's exit took its last process) is released
    // now: the TERM and CONT would find no member, at a scan each (a cgroup read; in
    // process-group mode a walk of /proc), and the wait's first check would look again.
    this.checkDone();
    if (signal === 'TERM' && !this.cleanedUp && !this.killing) {
      // SIGCONT after SIGTERM: a stopped process can only act on the TERM once it runs again.
      this.strategy.signalAll(this.identity, SIGNALS.TERM);
      this.strategy.signalAll(this.identity, SIGCONT);
      if (await this.waitDone(graceMs)) return;
    }
    if (this.cleanedUp) return;
    this.strategy.killAll(this.identity);
    await this.untilGone();
  }

  /** After a KILL: waits for the job to be cleaned up, killing again every second. */
  private async untilGone(): Promise<void> {
    // cgroup.kill is final; the process-group path re-scans in case something slipped through.
    while (!(await this.waitDone(1000))) this.strategy.killAll(this.identity);
  }

  /** Resolves true once cleaned up and drained, false when `ms` passes first. */
  private waitDone(ms: number): Promise<boolean> {
    if (this.cleanedUp) return Promise.resolve(true);
    this.checkDone();
    if (this.cleanedUp) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.drainWaiters = this.drainWaiters.filter((waiter) => waiter !== onDone);
        resolve(false);
      }, ms);
      const onDone = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.drainWaiters.push(onDone);
    });
  }

  private checkDone(): void {
    if (this.phase !== 'exited' || this.checking) return;
    this.checking = true;
    try {
      if (!this.strategy.isEmpty(this.identity)) return;
      // Every child reaped: orphans of this job were reparented to us, and the reaper thread
      // reaps them (the mid-exit once they are zombies) within moments; its event pokes us again.
      if (hasUnreapedChildren()) return;
      this.limits?.stop(this.strategy, this.identity);
      if (!this.strategy.release(this.identity) || this.limits?.release() === false) {
        // rmdir says EBUSY for a moment after "populated 0" (the kernel finishes tearing down the
        // last tasks' state): no further event will come, so look again shortly.
        setTimeout(() => this.poke(), RELEASE_RETRY_MS).unref();
        return;
      }
      this.enter('cleaned-up');
    } finally {
      this.checking = false;
    }
  }

  /** Entering `cleaned-up`: what the job kept given back, the last output read to its end. */
  private onCleanedUp(): void {
    this.closeKeptFiles();
    // Removing the cgroup's watch (inotify_rm_watch: tens of µs) is bookkeeping: it waits until a
    // waiting read woken below has sent its answer (replies leave before the next immediate). An
    // event meanwhile finds the job cleaned up and does nothing.
    setImmediate(() => this.stopWatching());
    this.stdin?.destroy();
    this.stdin = null;
    // Every process is gone: what the terminal still holds is read now, and it is closed.
    this.output.drainTerminal();
    // Every writer is gone, so the pipes are at EOF once their buffered bytes are read; give that
    // a bounded moment and then stop reading regardless.
    // A busy loop can run this timer in the very turn in which the last bytes became readable
    // (timers run before the poll phase): let one more poll phase read them before closing.
    // Pipes already read to their end (the usual short job) need no bound: no timer is armed.
    const streams = this.output.open;
    let open = streams.length;
    if (open === 0) {
      this.enter('drained');
      return;
    }
    const drain = setTimeout(
      () =>
        setImmediate(() => {
          this.output.close();
          this.enter('drained');
        }),
      this.config.drainMs,
    );
    drain.unref();
    const onClosed = () => {
      if (--open <= 0) {
        clearTimeout(drain);
        this.enter('drained');
      }
    };
    for (const stream of streams) stream.once('close', onClosed);
  }

  /** The descriptors the job's stats keep (platform/kept-files.ts): given back once it is gone. */
  private closeKeptFiles(): void {
    this.identity.files?.close();
    this.identity.memberFiles?.close();
  }

  /** Entering `drained`: the end told, and every wait for it woken. */
  private onDrained(): void {
    // Woken first: the notify watches tell their last matches ahead of the job's end.
    this.changedNow();
    this.hooks.onDone(this);
    for (const waiter of this.drainWaiters.splice(0)) waiter();
  }
}

/** Runs `fn` once the event loop has polled for I/O at least once more. */
function afterNextPoll(fn: () => void): void {
  setImmediate(() => setImmediate(fn));
}
