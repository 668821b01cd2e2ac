/**
 * Containment without a cgroup: the job's session/process group, its descendants by ppid, and
 * processes that carry the job's marker in their environment (escapers that setsid and
 * double-fork end up reparented to us, the subreaper, and keep their environment). They are
 * stopped with SIGSTOP first so none can fork away while we look, then SIGKILLed, until none is
 * left.
 */
import { descendantsOf, listProcesses, type ProcEntry } from '../platform/procfs.js';
import type { Containment } from '../../src/protocol/messages.js';
import { freezeThenKill, sameProcess, signalLeaderFirst } from './signal.js';
import { livesOn, markedStragglers } from './stragglers.js';
import type { ContainmentStrategy, JobIdentity } from './strategy.js';

/** How often a job with no kernel "empty" event is looked at again (a backstop to reaps). */
const EMPTY_CHECK_MS = 50;

export class ProcessGroupStrategy implements ContainmentStrategy {
  readonly info: Containment;

  constructor(reason: string) {
    this.info = { mode: 'process-group', cgroupRoot: null, reason };
  }

  prepare(): null {
    return null;
  }

  prepareNext(): void {}

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
    for (const straggler of markedStragglers(job)) roots.add(straggler.pid);
    const found = descendantsOf(roots, table);
    const byPid = new Map(table.map((entry) => [entry.pid, entry]));
    const members: ProcEntry[] = [];
    for (const pid of found) {
      const entry = byPid.get(pid);
      if (entry !== undefined && livesOn(entry) && pid !== self) members.push(entry);
    }
    return members;
  }

  signalAll(job: JobIdentity, signal: number): void {
    const seen = new Map<number, string>();
    const members = this.scan(job).map((entry) => (seen.set(entry.pid, entry.start), entry.pid));
    signalLeaderFirst(job, members, signal, sameProcess(seen));
  }

  killAll(job: JobIdentity): void {
    // Freeze first so nothing forks away between the scan and the kill.
    freezeThenKill(() => this.scan(job));
  }

  isEmpty(job: JobIdentity): boolean {
    return this.members(job).length === 0;
  }

  watch(_job: JobIdentity, onChange: () => void): () => void {
    // No kernel event tells us a process group emptied; the supervisor re-checks on every reap
    // (each of these processes is, or becomes, our descendant), and on a slow timer as a backstop.
    const timer = setInterval(onChange, EMPTY_CHECK_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  release(): boolean {
    return true;
  }

  killEveryJob(): boolean {
    return false; // no one handle on every job: each job's killAll signals its own
  }

  readonly everyJobKillFd = null;

  dispose(): void {}
}
