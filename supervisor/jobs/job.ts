/**
 * One job as the supervisor sees it: the leader it spawned, the pipes it reads, the output ring,
 * and the way from "leader exited" or "kill requested" to "cleaned up": every process gone and reaped,
 * the cgroup removed, the output drained.
 */
import fs from 'node:fs';
import net from 'node:net';
import { constants as os } from 'node:os';
import { native, type NativeSpawnOptions, type NativeSpawnResult } from '../native.js';
import { tty as ttyModule } from '../lazy-builtins.js';
import { InvalidInputError, SpawnError } from '../../src/protocol/errors.js';
import type { InputWrite, JobFacts, KillParams, SignalName, SpawnParams, SpawnReply, SupervisorConfig } from '../../src/protocol/messages.js';
import type { ContainmentStrategy, JobIdentity } from '../containment/index.js';
import { OutputRing, type ReadOptions, type OutputRead } from '../output/index.js';
import type { WaitableJob } from '../requests/read-wait.js';
import { jobMarker } from '../names.js';
import { PortProbe } from '../platform/ports.js';
import { stopAbandoned } from './abandon.js';
import { spawnLeader } from './leader-spawn.js';
import { injectFault } from './faults.js';
import { hasZombieChildren } from './zombies.js';
import { pipeInput, terminalInput, type JobInput } from './job-input.js';
import { JobTerminal, openTerminal, terminalEnv, type Terminal } from './terminal.js';
import { jobStats } from './stats.js';
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

/** The one read buffer of the supervisor (a pipe holds at most 1 MiB; we grow each job's so). */
const READ_BUFFER_BYTES = 256 * 1024;
const sharedReadBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
/** Where stdout is read when a stderr chunk comes in (the stderr chunk is in the shared buffer). */
const stdoutCatchUpBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
/** Reads of a pipe before wrapping it that may still find its end (see readIfAtEnd). */
const AT_END_MAX_READS = 4;

/** How soon a cgroup that could not be removed yet (EBUSY) is tried again. */
const RELEASE_RETRY_MS = 2;

/** Bound on one scan of new lines by a waiting read (it reads on from where it stopped). */
const WAIT_SCAN_BYTES = 4 * 1024 * 1024;

/** The native spawn's options for a job's leader (`terminal`: its controlling terminal, if any). */
function leaderOptions(params: SpawnParams, env: readonly string[], cgroup: string | null, terminal: Terminal | null, config: SupervisorConfig): NativeSpawnOptions {
  return {
    shell: params.shell,
    command: params.command,
    cwd: params.cwd,
    env: [...(terminal ? terminalEnv(env) : env), jobMarker(params.job)],
    cgroup,
    stdin: params.stdin ? 'pipe' : 'null',
    merge: params.merge,
    token: params.job + 1,
    forceFork: config.forceFork,
    ...(terminal ? { ctty: terminal.slave } : {}),
  };
}

export class SupervisedJob implements WaitableJob {
  readonly id: number;
  readonly ring: OutputRing;
  readonly identity: JobIdentity;
  exit: { code: number | null; signal: string | null; at: number } | null = null;
  /** Every process of the job is gone and reaped, its cgroup removed (the runtime's `cleanedUp`). */
  cleanedUp = false;
  private readonly streams: net.Socket[] = [];
  /** Output pipes not wrapped in sockets yet (see wrapOutputs). */
  private rawOutputs: { fd: number; name: 'stdout' | 'stderr' }[] = [];
  /** wrapOutputs has taken every output pipe: each is in `streams` or was read to its end. */
  private outputsTaken = false;
  private stdin: JobInput | null = null;
  /** The stdout pipe while stdout and stderr are apart: read before each stderr chunk is kept. */
  private stdoutPipe: { fd: number; stream: net.Socket } | null = null;
  /** A `tty: true` job's terminal: the master it reads and writes, and the slave it keeps open. */
  private terminal: JobTerminal | null = null;
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

  private constructor(
    params: SpawnParams,
    private readonly strategy: ContainmentStrategy,
    private readonly config: SupervisorConfig,
    private readonly hooks: JobHooks,
    readonly reply: SpawnReply,
    spawned: { pidfd: number; stdin: number; stdout: number; stderr: number },
    terminal: Terminal | null,
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
    if (!terminal) this.rawOutputs.push({ fd: spawned.stdout, name: 'stdout' });
    if (spawned.stderr >= 0) this.rawOutputs.push({ fd: spawned.stderr, name: 'stderr' });
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
        this.terminal = new JobTerminal(terminal);
        const stream = this.attachOutput(terminal.master, 'stdout', true);
        unwrapped.delete(terminal.master);
        this.stdin = terminalInput(terminal.master, () => !stream.destroyed);
      }
      if (spawned.stdin >= 0) this.stdin = pipeInput(spawned.stdin);
      unwrapped.delete(spawned.stdin);
      injectFault('job-watch');
      this.stopWatching = this.strategy.watch(this.identity, () => this.poke());
    } catch (error) {
      for (const fd of unwrapped) native.closeFd(fd);
      if (terminal && !this.terminal) native.closeFd(terminal.slave);
      throw error;
    }
  }

  /**
   * Wraps the output pipes in sockets, once the spawn's reply is out: a socket costs tens of
   * microseconds, and nothing is lost meanwhile (what the job writes waits in the pipe, and its
   * exit is reported only after a later poll, see leaderReaped). Requests about the job come
   * later still. A pipe already at its end (a short job that is done by now: every writer gone)
   * is read to it and closed instead, without a socket (two per job of `true`s: bench,
   * throughput). Should a wrap fail, the job is stopped: a job whose output cannot be read must
   * not run on unseen.
   */
  private wrapOutputs(): void {
    const raw = this.rawOutputs.splice(0);
    if (this.isDrained) {
      for (const { fd } of raw) native.closeFd(fd);
      return;
    }
    try {
      while (raw.length > 0) {
        const { fd, name } = raw[0]!;
        injectFault('job-output');
        if (this.readIfAtEnd(fd, name)) native.closeFd(fd);
        else this.attachOutput(fd, name);
        raw.shift();
      }
      this.outputsTaken = true;
    } catch {
      for (const { fd, name } of raw) {
        native.closeFd(fd);
        this.ring.end(name);
      }
      this.cleanup ??= this.stop('KILL', 0);
    }
  }

  /** A job whose setup failed: its pipes closed, every process killed and reaped, its cgroup gone. */
  private discard(): Promise<void> {
    for (const { fd } of this.rawOutputs.splice(0)) native.closeFd(fd);
    for (const stream of this.streams) stream.destroy();
    this.stdin?.destroy();
    this.stdin = null;
    this.terminal?.closeSlave();
    const pidfd = this.pidfd;
    this.pidfd = -1;
    return stopAbandoned(this.id + 1, this.identity, this.strategy, pidfd).finally(() => this.closeKeptFiles());
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
      return Promise.reject(new SpawnError(describeSpawnFailure(error, params), { cause: error, details: nativeDetails(error) }));
    }
    const cgroup = strategy.prepare(params.job);
    let terminal: Terminal | null = null;
    const spawnFailed = (error: unknown): SpawnError => {
      if (terminal) {
        native.closeFd(terminal.master);
        native.closeFd(terminal.slave);
      }
      if (cgroup) native.cgroupRemove(cgroup);
      return new SpawnError(describeSpawnFailure(error, params), { cause: error, details: nativeDetails(error) });
    };
    return new Promise((resolve, reject) => {
      let options: NativeSpawnOptions;
      try {
        terminal = params.tty === true ? openTerminal() : null;
        options = leaderOptions(params, env, cgroup, terminal, config);
      } catch (error) {
        reject(spawnFailed(error));
        return;
      }
      // Never throws: on a spawner thread's result this runs from the addon's queue, where an
      // exception would have no caller to go to.
      spawnLeader(options, config.spawnOn ?? 'auto', (error, spawned) => {
        try {
          if (error || !spawned) reject(spawnFailed(error));
          else SupervisedJob.setUpSpawned(params, strategy, config, hooks, { spawned, cgroup, terminal }, register).then(resolve, reject);
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
    leader: { spawned: NativeSpawnResult; cgroup: string | null; terminal: Terminal | null },
    register: (job: SupervisedJob) => void,
  ): Promise<SupervisedJob> {
    const { spawned, cgroup, terminal } = leader;
    const reply: SpawnReply = { pid: spawned.pid, start: spawned.start === null ? null : onHostBootClock(spawned.start), cgroup, method: spawned.method, startedAt: Date.now() };
    const job = new SupervisedJob(params, strategy, config, hooks, reply, spawned, terminal);
    try {
      job.setUp(spawned, terminal);
    } catch (error) {
      await job.discard();
      throw new SpawnError(`the job started but could not be set up, so it was stopped: ${(error as Error).message}`, {
        cause: error,
        details: nativeDetails(error),
      });
    }
    register(job);
    setImmediate(() => {
      job.wrapOutputs();
      strategy.prepareNext();
    });
    return job;
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
    (this.outputEnded() ? (fn: () => void) => fn() : afterNextPoll)(() => {
      this.exit = { code, signal: signal ? signalName(signal) : null, at };
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
    });
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

  get ended(): boolean {
    return this.exit !== null;
  }

  /** Cleaned up, and the last output read: nothing more will come. */
  get drained(): boolean {
    return this.isDrained;
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
    // A job already empty (the usual end: the leader's exit took its last process) is released
    // now: the TERM and CONT would find no member, at a scan each (a cgroup read; in
    // process-group mode a walk of /proc; ~80 µs of a waiting status's exit), and the wait's
    // first check would look again.
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
    if (this.cleanedUp || this.exit === null || this.checking) return;
    this.checking = true;
    try {
      if (!this.strategy.isEmpty(this.identity)) return;
      // Every zombie reaped: orphans of this job were reparented to us, and the reaper thread
      // reaps them within moments; its next event pokes us again.
      if (hasZombieChildren()) return;
      if (!this.strategy.release(this.identity)) {
        // rmdir says EBUSY for a moment after "populated 0" (the kernel finishes tearing down the
        // last tasks' state): no further event will come, so look again shortly.
        setTimeout(() => this.poke(), RELEASE_RETRY_MS).unref();
        return;
      }
      this.finish();
    } finally {
      this.checking = false;
    }
  }

  private finish(): void {
    this.cleanedUp = true;
    this.closeKeptFiles();
    // Removing the cgroup's watch (inotify_rm_watch: tens of µs) is bookkeeping: it waits until a
    // waiting read woken below has sent its answer (replies leave before the next immediate). An
    // event meanwhile finds the job cleaned up and does nothing.
    setImmediate(() => this.stopWatching());
    this.stdin?.destroy();
    this.stdin = null;
    // Every process is gone: what the terminal still holds is read now, and it is closed.
    if (this.terminal) this.drainTerminal(this.terminal);
    // Every writer is gone, so the pipes are at EOF once their buffered bytes are read; give that
    // a bounded moment and then stop reading regardless.
    // A busy loop can run this timer in the very turn in which the last bytes became readable
    // (timers run before the poll phase): let one more poll phase read them before closing.
    // Pipes already read to their end (the usual short job) need no bound: no timer is armed.
    let open = this.streams.filter((stream) => !stream.destroyed).length;
    if (open === 0) {
      this.complete();
      return;
    }
    const drain = setTimeout(() => setImmediate(() => this.closeOutput()), this.config.drainMs);
    drain.unref();
    const onClosed = () => {
      if (--open <= 0) {
        clearTimeout(drain);
        this.complete();
      }
    };
    for (const stream of this.streams) if (!stream.destroyed) stream.once('close', onClosed);
  }

  private isDrained = false;

  /** The descriptors the job's stats keep (platform/kept-files.ts): given back once it is gone. */
  private closeKeptFiles(): void {
    this.identity.files?.close();
    this.identity.memberFiles?.close();
  }

  /** Every output pipe is at end of file and read to it (a terminal's master never is before cleanup). */
  private outputEnded(): boolean {
    return this.outputsTaken && this.terminal === null && this.streams.every((stream) => stream.readableEnded);
  }

  private complete(): void {
    if (this.isDrained) return;
    this.isDrained = true;
    this.hooks.onDone(this);
    this.changedNow();
    for (const waiter of this.drainWaiters.splice(0)) waiter();
  }

  private closeOutput(): void {
    for (const stream of this.streams) stream.destroy();
    this.complete();
  }

  private drainTerminal(terminal: JobTerminal): void {
    terminal.drain(sharedReadBuffer, (chunk) => this.ring.push('stdout', chunk));
    this.ring.end('stdout');
    this.changedSoon();
    for (const stream of this.streams) stream.destroy(); // the master's (a terminal job has no other)
  }

  /**
   * Reads what pipe `fd` holds now; true once it is at end of file (the ring then knows it ended).
   * False when its writer is still there (EAGAIN) or after a bounded
   * amount (a job writing fast is read by its socket, not by this loop).
   */
  private readIfAtEnd(fd: number, name: 'stdout' | 'stderr'): boolean {
    // Our end only (the job's end is its own file description, and blocks as a job expects);
    // its socket would set this too.
    native.setNonBlocking(fd);
    const read = readHeld(fd, sharedReadBuffer, { maxReads: AT_END_MAX_READS, shortReadEmpties: false }, (chunk) => {
      if (name === 'stderr') this.catchUpStdout();
      this.ring.push(name, chunk);
      this.changedSoon();
    });
    if (read !== 'end') return false;
    this.ring.end(name);
    this.changedSoon();
    return true;
  }

  /**
   * Two pipes keep no order between them: what both hold when the supervisor reads has no order
   * the kernel could tell. One promise is kept: a stderr line is never shown before a stdout line
   * written before it (a build's "Build failed" never lands above its last "compiling ..." line).
   * A stderr chunk has just been read; every stdout line written before any of its lines is in the
   * stdout pipe by now, so stdout is read to empty first (at most the pipe's 1 MiB) and kept
   * ahead of it. A stderr line may still come after stdout lines written after it.
   */
  private catchUpStdout(): void {
    const pipe = this.stdoutPipe;
    if (!pipe || pipe.stream.destroyed || pipe.stream.readableEnded) return;
    try {
      // At its end, libuv sees that on its next read.
      readHeld(pipe.fd, stdoutCatchUpBuffer, { maxReads: Infinity, shortReadEmpties: true }, (chunk) => this.ring.push('stdout', chunk));
    } catch {
      // A read that failed: the socket's own read reports it.
    }
  }

  private attachOutput(fd: number, name: 'stdout' | 'stderr', terminal = false): net.Socket {
    // Reads land in one buffer shared by every stream of every job (the ring copies what it keeps
    // before push returns, and reads run one at a time on this thread), so a flood allocates
    // nothing per read for the garbage collector to catch up with.
    // A terminal's master is no pipe or socket to net.Socket; tty.ReadStream gives it libuv's TTY
    // handle (which leaves the master non-blocking as openPty made it) and is a net.Socket too.
    const options = {
      onread: {
        buffer: sharedReadBuffer,
        callback: (bytes: number, buffer: Uint8Array) => {
          if (name === 'stderr') this.catchUpStdout();
          this.ring.push(name, Buffer.from(buffer.buffer, buffer.byteOffset, bytes));
          this.changedSoon();
          return true;
        },
      },
    };
    const stream = terminal
      ? new (ttyModule().ReadStream)(fd, options as net.SocketConstructorOpts)
      : new net.Socket({ fd, readable: true, writable: false, ...options } as net.SocketConstructorOpts);
    // A terminal's read stream starts only when asked (tty.ReadStream's manualStart).
    if (terminal) stream.resume();
    else if (name === 'stdout') this.stdoutPipe = { fd, stream };
    stream.on('end', () => {
      this.ring.end(name);
      this.changedSoon();
    });
    stream.on('error', () => {
      this.ring.end(name);
      this.changedSoon();
    });
    this.streams.push(stream);
    return stream;
  }
}

/**
 * Reads what the non-blocking pipe `fd` holds now into `buffer`, each chunk handed to `push` (which
 * copies what it keeps) before the next read, at most `maxReads` reads: 'end' at end of file,
 * 'empty' once it holds nothing more (EAGAIN; with `shortReadEmpties`, also a read shorter than
 * the buffer, which emptied it: one system call saved), 'more' at the bound. Other errors throw.
 */
function readHeld(
  fd: number,
  buffer: Buffer,
  { maxReads, shortReadEmpties }: { maxReads: number; shortReadEmpties: boolean },
  push: (chunk: Buffer) => void,
): 'end' | 'empty' | 'more' {
  for (let reads = 0; reads < maxReads; reads++) {
    let bytes: number;
    try {
      bytes = fs.readSync(fd, buffer, 0, buffer.length, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return 'empty';
      throw error;
    }
    if (bytes === 0) return 'end';
    push(buffer.subarray(0, bytes));
    if (shortReadEmpties && bytes < buffer.length) return 'empty';
  }
  return 'more';
}

/** Runs `fn` once the event loop has polled for I/O at least once more. */
function afterNextPoll(fn: () => void): void {
  setImmediate(() => setImmediate(fn));
}

function nativeDetails(error: unknown): Record<string, unknown> {
  const e = error as { code?: unknown; errno?: unknown; syscall?: unknown; path?: unknown };
  return { code: e.code, errno: e.errno, syscall: e.syscall, path: e.path };
}

function describeSpawnFailure(error: unknown, params: SpawnParams): string {
  const e = error as { code?: string; syscall?: string; message?: string };
  if (e.syscall === 'chdir') {
    if (e.code === 'ENOENT') return `the working directory ${params.cwd} does not exist`;
    if (e.code === 'ENOTDIR') return `the working directory ${params.cwd} is not a directory`;
    return `cannot enter the working directory ${params.cwd} (${e.code})`;
  }
  if (e.syscall === 'execve') return `cannot run the shell ${params.shell} (${e.code}); a POSIX shell is needed to run commands`;
  return `could not start the job: ${e.message ?? String(error)}`;
}
