/**
 * One job's limits while it lives: each held by the best mechanism here (the job cgroup's v2
 * controllers, else groups in v1 hierarchies, else the supervisor's watchdog), watched at a short
 * interval, and the job stopped whole when one is reached. What they did goes in the job's facts.
 */
import type { JobLimits, LimitFacts, LimitKind, LimitMechanism } from '../../src/protocol/limits.js';
import type { ContainmentStrategy, JobIdentity } from '../containment/index.js';
import { jobMemoryBytes } from '../jobs/stats.js';
import { limitsContext } from './context.js';
import { makeV1Groups, readV1Groups, removeV1Groups, type V1Controller, type V1Groups } from './v1-groups.js';
import { readV2Limits, v2ControllersOf, writeV2Limits } from './v2-controllers.js';
import { CpuWatchdog } from './cpu-watchdog.js';

/** How often a limited job is looked at: the watchdog's overshoot is what a job allocates in this time. */
export const LIMIT_WATCH_MS = 100;

/** The controller (v1 or v2: the same names) that holds each kind of limit. */
const CONTROLLER_OF: Record<LimitKind, V1Controller> = { memory: 'memory', processes: 'pids', cpu: 'cpu' };
const VALUE_OF: Record<LimitKind, keyof JobLimits> = { memory: 'memoryBytes', processes: 'processes', cpu: 'cpuMillis' };
const KINDS: readonly LimitKind[] = ['memory', 'processes', 'cpu'];

/** Every watched job's look, run by one timer: a wake-up of the event loop costs more than a look. */
const watched = new Set<() => void>();
let watchTicker: NodeJS.Timeout | null = null;

export class JobLimitHold {
  private readonly by: Record<LimitKind, LimitMechanism | null>;
  private v1: V1Groups = {};
  private cpu: CpuWatchdog | null = null;
  private cpuHeld = true;
  /** Its look while watched (a member of `watched`); null before and after. */
  private looking: (() => void) | null = null;
  private reached: 'memory' | 'processes' | null = null;
  private watchdogPeak: number | null = null;
  private last: Pick<LimitFacts, 'peakMemoryBytes' | 'forkFailures' | 'throttledMs'> = { peakMemoryBytes: null, forkFailures: null, throttledMs: null };
  private memoryHigh: Pick<LimitFacts, 'slowedAtMemoryHigh' | 'memoryPressure'> = {};

  /**
   * Sets the job's limits up before its spawn: written into its cgroup `cgroup` (made, still
   * empty) where it has the controllers, and v1 groups made for the rest where there are any.
   * Throws, leaving nothing made, when a write fails.
   */
  constructor(
    private readonly limits: JobLimits,
    job: number,
    private readonly cgroup: string | null,
  ) {
    const context = limitsContext();
    const v2 = cgroup !== null && !context.watchdogOnly ? v2ControllersOf(cgroup) : new Set<string>();
    const mechanism = (kind: LimitKind): LimitMechanism | null => {
      if (limits[VALUE_OF[kind]] === null) return null;
      if (v2.has(CONTROLLER_OF[kind])) return 'cgroup-v2';
      if (!context.watchdogOnly && context.v1[CONTROLLER_OF[kind]] !== undefined) return 'cgroup-v1';
      // The CPU watchdog freezes the job's own cgroup: a job without one (process-group mode) has none.
      return kind === 'cpu' && cgroup === null ? null : 'watchdog';
    };
    const by = { memory: mechanism('memory'), processes: mechanism('processes'), cpu: mechanism('cpu') };
    this.by = by;
    const heldBy = (held: LimitMechanism) => KINDS.filter((kind) => by[kind] === held).map((kind) => CONTROLLER_OF[kind]);
    const v2Held = heldBy('cgroup-v2');
    if (v2Held.length > 0) writeV2Limits(cgroup!, limits, v2Held);
    const v1Held = heldBy('cgroup-v1');
    if (v1Held.length > 0) this.v1 = makeV1Groups(context.groupName(job), limits, context.v1, v1Held);
    if (by.cpu === 'watchdog') this.cpu = new CpuWatchdog(cgroup!, limits.cpuMillis! / 1000, LIMIT_WATCH_MS);
  }

  /** The v1 groups the leader joins before it execs. */
  get joinGroups(): string[] {
    return Object.values(this.v1);
  }

  /** Watches the job from its spawn on; `onReached` once, when a limit that stops the job is reached. */
  watch(strategy: ContainmentStrategy, identity: JobIdentity, onReached: () => void): void {
    const look = () => {
      if (this.reached !== null) return;
      if (this.cpuHeld) this.cpu?.look();
      this.reached = this.look(strategy, identity);
      if (this.reached !== null) onReached();
    };
    this.looking = look;
    watched.add(look);
    watchTicker ??= setInterval(() => {
      for (const each of watched) each();
    }, LIMIT_WATCH_MS).unref();
  }

  /** One look: what the controllers say, and the watchdog's sample; the limit reached, if one is. */
  private look(strategy: ContainmentStrategy, identity: JobIdentity): 'memory' | 'processes' | null {
    let reached: 'memory' | 'processes' | null = this.readControllers();
    if (this.by.memory === 'watchdog' || this.by.processes === 'watchdog') {
      const members = strategy.members(identity);
      if (this.by.memory === 'watchdog') {
        const bytes = jobMemoryBytes(identity, members);
        if (bytes !== null) this.watchdogPeak = Math.max(this.watchdogPeak ?? 0, bytes);
        if (bytes !== null && bytes > this.limits.memoryBytes!) reached = 'memory';
      }
      if (this.by.processes === 'watchdog' && members.length > this.limits.processes!) reached ??= 'processes';
    }
    return reached;
  }

  /** What the job's v2 controllers and v1 groups say now (kept for facts); 'memory' when the job is at, or was stopped by, its memory limit. */
  private readControllers(): 'memory' | null {
    let reached: 'memory' | null = null;
    if (this.cgroup !== null && KINDS.some((kind) => this.by[kind] === 'cgroup-v2')) {
      const v2 = readV2Limits(this.cgroup);
      this.last = { peakMemoryBytes: v2.peakMemoryBytes, forkFailures: v2.forkFailures, throttledMs: v2.throttledMs };
      if (this.by.memory === 'cgroup-v2') this.memoryHigh = { slowedAtMemoryHigh: v2.slowedAtMemoryHigh, memoryPressure: v2.memoryPressure };
      if (this.by.memory === 'cgroup-v2' && v2.oomKilled) reached = 'memory';
    }
    if (Object.keys(this.v1).length > 0) {
      const v1 = readV1Groups(this.v1, this.limits.memoryBytes);
      this.last = {
        peakMemoryBytes: this.by.memory === 'cgroup-v1' ? v1.peakMemoryBytes : this.last.peakMemoryBytes,
        forkFailures: this.by.processes === 'cgroup-v1' ? v1.forkFailures : this.last.forkFailures,
        throttledMs: this.by.cpu === 'cgroup-v1' ? v1.throttledMs : this.last.throttledMs,
      };
      if (v1.atMemoryLimit) reached = 'memory';
    }
    return reached;
  }

  /**
   * Stops watching. With the job's processes gone, a last look at its controllers first: the
   * kernel's own stop (memory.oom.group) may have come between two looks.
   */
  stop(strategy?: ContainmentStrategy, identity?: JobIdentity): void {
    this.cpu?.stop();
    if (this.looking === null) return;
    watched.delete(this.looking);
    this.looking = null;
    if (watched.size === 0 && watchTicker !== null) {
      clearInterval(watchTicker);
      watchTicker = null;
    }
    if (strategy && identity && this.reached === null) this.reached = this.look(strategy, identity);
  }

  /** Thaws a job the CPU watchdog froze, and freezes it no more (it is being stopped). */
  thawForGood(): void {
    this.cpu?.stop();
    this.cpuHeld = false;
  }

  /** Removes the v1 groups; false while a process is still in one. */
  release(): boolean {
    return removeV1Groups(this.v1);
  }

  /** The facts now: the controllers read again while the job lives (a few small reads). */
  facts(): LimitFacts {
    if (this.looking !== null) this.readControllers();
    return {
      set: this.limits,
      by: this.by,
      reached: this.reached,
      peakMemoryBytes: this.by.memory === 'watchdog' ? this.watchdogPeak : this.last.peakMemoryBytes,
      forkFailures: this.last.forkFailures,
      throttledMs: this.cpu ? Math.round(this.cpu.throttledMs) : this.last.throttledMs,
      ...this.memoryHigh,
    };
  }
}
