/**
 * How the supervisor finds and stops every process of a job. Two strategies behind one interface:
 *
 * - cgroup: each job gets a fresh cgroup, which the leader is born into (clone3
 *   CLONE_INTO_CGROUP), so nothing can fork away unseen; `cgroup.kill` stops all at once and
 *   `cgroup.events` says when the cgroup is empty.
 * - process-group: the job's session/process group, its descendants by ppid, and processes that
 *   carry the job's marker in their environment (escapers that setsid and double-fork end up
 *   reparented to us, the subreaper, and keep their environment). They are stopped with SIGSTOP
 *   first so none can fork away while we look, then SIGKILLed, until none is left.
 */
import fs from 'node:fs';
import path from 'node:path';
import { constants as os } from 'node:os';
import { native } from './native.js';
import { findOwnCgroupDir, removeCgroupTree } from './platform/cgroup.js';
import { cgroupOf, childrenOf, descendantsOf, environContains, listProcesses, processStartTime, readProcStat, type ProcEntry } from './platform/procfs.js';
import type { Containment, ContainmentChoice } from '../src/protocol/messages.js';

/** What a strategy needs to know about one job. */
export interface JobIdentity {
  job: number;
  pid: number;
  /** `HEPH_JOB=<supervisor pid>:<job>` in every job process's environment. */
  marker: string;
  cgroup: string | null;
  /** Set once the reaper has reaped the leader: from then on its pid may name another process. */
  leaderReaped?: boolean;
  /** A pidfd on the leader while we hold one: signals through it can never reach another process. */
  pidfd?: number;
}

export interface ContainmentStrategy {
  readonly info: Containment;
  /** Makes the job's cgroup (or nothing) before the spawn. */
  prepare(job: number): string | null;
  /** Live processes of the job (pids), leader included while it lives. */
  members(job: JobIdentity): number[];
  /** Sends `signal` to every live process of the job. */
  signalAll(job: JobIdentity, signal: number): void;
  /** SIGKILLs every process of the job. */
  killAll(job: JobIdentity): void;
  /** True when no live process of the job remains. */
  isEmpty(job: JobIdentity): boolean;
  /** Calls back when the job may have become empty (a hint; callers re-check with isEmpty). */
  watch(job: JobIdentity, onChange: () => void): () => void;
  /** Removes what prepare made. False while still busy. */
  release(job: JobIdentity): boolean;
  /** Removes the strategy's own footprint (the subtree) at exit. */
  dispose(): void;
}

const SIGKILL = os.signals.SIGKILL;
const SIGSTOP = os.signals.SIGSTOP;

/** Processes that are not zombies (a zombie has exited; only its parent's wait remains). */
function alive(entry: ProcEntry): boolean {
  return entry.state !== 'Z' && entry.state !== 'X';
}

function readPids(file: string): number[] {
  try {
    const text = fs.readFileSync(file, 'latin1');
    return text.length === 0 ? [] : text.trim().split('\n').map(Number);
  } catch {
    return [];
  }
}

/** Every cgroup.procs in a cgroup and below it (a job may create nested cgroups). */
function cgroupTreePids(dir: string): number[] {
  const pids = readPids(path.join(dir, 'cgroup.procs'));
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return pids;
  }
  for (const entry of entries) if (entry.isDirectory()) pids.push(...cgroupTreePids(path.join(dir, entry.name)));
  return pids;
}

/**
 * Signals the leader's process group first, in one kill(2) (atomic for the group, as a terminal's
 * Ctrl-C is), then every other member. Leader first matters: if a child died of the signal
 * before the shell got it, `wait` would return and the shell exit 0 — the job would read as
 * "exited 0" instead of "killed SIGTERM". The group id stays ours only while the leader or a member
 * remains: once the leader is reaped and the members have left (setsid), the number can be recycled
 * as a stranger's group, so after the reap the group is not signalled as such.
 */
function signalLeaderFirst(job: JobIdentity, members: number[], signal: number, stillOurs: (pid: number) => boolean): void {
  const leader = job.pidfd !== undefined && job.pidfd >= 0 && native.pidfdSendSignal(job.pidfd, signal);
  const group = !job.leaderReaped && native.signalPid(-job.pid, signal);
  for (const pid of members) {
    if (leader && pid === job.pid) continue;
    // The group's members got it already (twice would matter to an INT handler: "again to force").
    if (group && readProcStat(pid)?.pgid === job.pid) continue;
    signalIfStill(pid, signal, stillOurs);
  }
}

/** A check that a pid still names the process a scan saw (same start time). */
function sameProcess(seen: Map<number, string>): (pid: number) => boolean {
  return (pid) => {
    const start = processStartTime(pid);
    return start !== null && start === seen.get(pid);
  };
}

/**
 * Signals `pid` only if it is still the process we found: a pidfd is opened first and the
 * process checked after, so the signal goes to the process the check saw or, if that one has
 * already been reaped (and its pid perhaps recycled), to no one (ESRCH on the pidfd).
 */
function signalIfStill(pid: number, signal: number, stillOurs: (pid: number) => boolean): boolean {
  let fd: number;
  try {
    fd = native.pidfdOpen(pid);
  } catch {
    return false; // gone
  }
  try {
    return stillOurs(pid) && native.pidfdSendSignal(fd, signal);
  } finally {
    native.closeFd(fd);
  }
}

/**
 * Live children of the supervisor carrying the job's marker, other than the leader. Every process
 * that left its job (a new session after a double fork, or another cgroup) is reparented to us,
 * the subreaper, once its parents in the job are gone, so looking at our own children (not at
 * every process on the machine) finds them. Their own children follow once they are killed.
 */
function markedStragglers(job: JobIdentity): number[] {
  const found: number[] = [];
  for (const pid of childrenOf(process.pid)) {
    if (pid === job.pid) continue;
    const entry = readProcStat(pid);
    if (entry && alive(entry) && environContains(pid, job.marker)) found.push(pid);
  }
  return found;
}

class CgroupStrategy implements ContainmentStrategy {
  readonly info: Containment;

  constructor(private readonly root: string, reason: string) {
    this.info = { mode: 'cgroup', cgroupRoot: root, reason };
  }

  prepare(job: number): string {
    const dir = path.join(this.root, `job-${job}`);
    native.cgroupCreate(dir);
    return dir;
  }

  members(job: JobIdentity): number[] {
    return job.cgroup ? cgroupTreePids(job.cgroup) : [];
  }

  signalAll(job: JobIdentity, signal: number): void {
    // A pid read from cgroup.procs is ours while it is still in the job's cgroup (or one below).
    const own = `/heph-jobs-${process.pid}/job-${job.job}`;
    signalLeaderFirst(job, this.members(job), signal, (pid) => {
      const cgroup = cgroupOf(pid);
      return cgroup !== null && (cgroup.endsWith(own) || cgroup.includes(`${own}/`));
    });
  }

  killAll(job: JobIdentity): void {
    if (job.cgroup) native.cgroupKill(job.cgroup);
  }

  /**
   * Empty when the cgroup is, and no process that left it (a job running as root can write its
   * pid into another cgroup) still carries the job's marker below us: escapers are reparented to
   * the supervisor, the subreaper, so they stay findable. The sweep of our children runs only
   * once the cgroup reports empty.
   */
  isEmpty(job: JobIdentity): boolean {
    if (job.cgroup !== null && native.cgroupPopulated(job.cgroup)) return false;
    const stragglers = markedStragglers(job);
    for (const pid of stragglers) native.signalPid(pid, SIGKILL);
    return stragglers.length === 0;
  }

  watch(job: JobIdentity, onChange: () => void): () => void {
    if (!job.cgroup) return () => {};
    // cgroup.events is modified (inotify IN_MODIFY) whenever "populated" flips.
    const watcher = fs.watch(path.join(job.cgroup, 'cgroup.events'), { persistent: false }, onChange);
    watcher.on('error', onChange);
    return () => watcher.close();
  }

  release(job: JobIdentity): boolean {
    return job.cgroup === null || removeCgroupTree(job.cgroup, native.cgroupRemove);
  }

  dispose(): void {
    removeCgroupTree(this.root, native.cgroupRemove);
  }
}

class ProcessGroupStrategy implements ContainmentStrategy {
  readonly info: Containment;

  constructor(reason: string) {
    this.info = { mode: 'process-group', cgroupRoot: null, reason };
  }

  prepare(): null {
    return null;
  }

  /**
   * The leader's session and process group, everything descending from the leader, and every
   * process with the job's marker in its environment, plus their descendants. Zombies excluded.
   */
  members(job: JobIdentity): number[] {
    return this.scan(job).map((entry) => entry.pid);
  }

  /** The members as the scan saw them (with start times, to check a pid still names the same process). */
  private scan(job: JobIdentity): ProcEntry[] {
    const table = listProcesses();
    // A reaped leader's pid may have been recycled: it is no root any more, and its number as a
    // session or group id counts only while no process has that pid (a live member of the old
    // session or group keeps the kernel from reusing the number, so both cannot be seen at once).
    const recycled = job.leaderReaped === true && table.some((entry) => entry.pid === job.pid);
    const roots = new Set<number>(job.leaderReaped ? [] : [job.pid]);
    const self = process.pid;
    for (const entry of table) {
      if (entry.pid === self || recycled) continue;
      if (entry.sid === job.pid || entry.pgid === job.pid) roots.add(entry.pid);
    }
    // Only processes below the supervisor can carry our marker legitimately; checking their
    // environment is the expensive part, so limit it to them.
    for (const pid of markedStragglers(job)) roots.add(pid);
    const found = descendantsOf(roots, table);
    const byPid = new Map(table.map((entry) => [entry.pid, entry]));
    const members: ProcEntry[] = [];
    for (const pid of found) {
      const entry = byPid.get(pid);
      if (entry !== undefined && alive(entry) && pid !== self) members.push(entry);
    }
    return members;
  }

  signalAll(job: JobIdentity, signal: number): void {
    const seen = new Map<number, string>();
    const members = this.scan(job).map((entry) => (seen.set(entry.pid, entry.start), entry.pid));
    signalLeaderFirst(job, members, signal, sameProcess(seen));
  }

  killAll(job: JobIdentity): void {
    // Freeze first so nothing forks away between the scan and the kill; repeat until a scan
    // finds no one new (a process forked just before its SIGSTOP shows up in the next scan).
    const seen = new Map<number, string>();
    const stillOurs = sameProcess(seen);
    const scan = () => this.scan(job).map((entry) => (seen.set(entry.pid, entry.start), entry.pid));
    const stopped = new Set<number>();
    for (let round = 0; round < 100; round++) {
      const fresh = scan().filter((pid) => !stopped.has(pid));
      if (fresh.length === 0) break;
      for (const pid of fresh) {
        signalIfStill(pid, SIGSTOP, stillOurs);
        stopped.add(pid);
      }
    }
    for (const pid of stopped) signalIfStill(pid, SIGKILL, stillOurs);
    for (const pid of scan()) signalIfStill(pid, SIGKILL, stillOurs);
  }

  isEmpty(job: JobIdentity): boolean {
    return this.members(job).length === 0;
  }

  watch(_job: JobIdentity, onChange: () => void): () => void {
    // No kernel event tells us a process group emptied; the supervisor re-checks on every reap
    // (each of these processes is, or becomes, our descendant), and on a slow timer as a backstop.
    const timer = setInterval(onChange, 50);
    timer.unref();
    return () => clearInterval(timer);
  }

  release(): boolean {
    return true;
  }

  dispose(): void {}
}

/** Picks the strategy: cgroup when asked for or when `auto` finds a writable cgroup v2 tree. */
export function chooseContainment(choice: ContainmentChoice, cgroupParent: string | null): ContainmentStrategy {
  if (choice === 'process-group') return new ProcessGroupStrategy('process-group containment was requested');
  let parent = cgroupParent;
  let reason: string;
  if (parent === null) {
    const probe = findOwnCgroupDir();
    if (!probe.ok) {
      if (choice === 'cgroup') throw new Error(`cgroup containment was requested but is unavailable: ${probe.reason}`);
      return new ProcessGroupStrategy(`no usable cgroup v2 tree: ${probe.reason}`);
    }
    parent = probe.parent;
    reason = `writable cgroup v2 tree at ${parent}`;
  } else {
    reason = `cgroup v2 tree at ${parent} (configured)`;
  }
  const root = path.join(parent, `heph-jobs-${process.pid}`);
  try {
    native.cgroupCreate(root);
    if (!fs.existsSync(path.join(root, 'cgroup.kill'))) {
      native.cgroupRemove(root);
      throw new Error('this kernel has no cgroup.kill (needs Linux 5.14 or later)');
    }
  } catch (error) {
    const why = `cannot create ${root}: ${(error as Error).message}`;
    if (choice === 'cgroup') throw new Error(`cgroup containment was requested but is unavailable: ${why}`);
    return new ProcessGroupStrategy(`no usable cgroup v2 tree: ${why}`);
  }
  return new CgroupStrategy(root, reason);
}
