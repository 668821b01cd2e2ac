/**
 * Signals that reach only the process they were meant for. A pid is only a number: once its
 * process is reaped the kernel may give it to a stranger, so every signal here goes through a
 * pidfd opened before the check that the pid is still ours.
 */
import { constants as os } from 'node:os';
import { native } from '../native.js';
import { processStartTime, readProcStat, sameStartTime, type ProcEntry } from '../platform/procfs.js';
import type { JobIdentity } from './strategy.js';

const SIGKILL = os.signals.SIGKILL;
const SIGSTOP = os.signals.SIGSTOP;
/** Freeze rounds before the kill: each finds what forked just before the previous SIGSTOPs. */
const MAX_FREEZE_ROUNDS = 100;

/**
 * Signals the leader's process group first, in one kill(2) (atomic for the group, as a terminal's
 * Ctrl-C is), then every other member. Leader first matters: if a child died of the signal
 * before the shell got it, `wait` would return and the shell exit 0 — the job would read as
 * "exited 0" instead of "killed SIGTERM". The group id stays ours only while the leader or a member
 * remains: once the leader is reaped and the members have left (setsid), the number can be recycled
 * as a stranger's group, so the group is signalled only while the addon has not reaped the leader
 * (checked under the reaper's lock: `leaderReaped` is set later, on this thread).
 */
export function signalLeaderFirst(job: JobIdentity, members: number[], signal: number, stillOurs: (pid: number) => boolean): void {
  const leader = job.pidfd !== undefined && job.pidfd >= 0 && native.pidfdSendSignal(job.pidfd, signal);
  const group = !job.leaderReaped && native.signalChildGroup(job.pid, signal);
  for (const pid of members) {
    if (leader && pid === job.pid) continue;
    // The group's members got it already (twice would matter to an INT handler: "again to force").
    if (group && readProcStat(pid)?.pgid === job.pid) continue;
    signalIfStill(pid, signal, stillOurs);
  }
}

/** A check that a pid still names the process a scan saw (same start time). */
export function sameProcess(seen: Map<number, string>): (pid: number) => boolean {
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
export function signalIfStill(pid: number, signal: number, stillOurs: (pid: number) => boolean): boolean {
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
 * Signals the process group led by `pid` only while `pid` still names the process that started at
 * `start` and leads its own group (a job leader: it called setsid, so its group id is its pid for
 * good). A pidfd held across the check and the kill(2) pins the pid: while we hold it the number
 * cannot be given to another process, so the group signalled is the one the check saw (or one its
 * members still keep, if the leader died in between). False when it is not (or no longer) that.
 */
export function signalGroupOf(pid: number, start: string, signal: number): boolean {
  let fd: number;
  try {
    fd = native.pidfdOpen(pid);
  } catch {
    return false; // reaped: its group id may be anyone's by now
  }
  try {
    const entry = readProcStat(pid);
    if (entry === null || !sameStartTime(start, entry.start) || entry.pgid !== pid) return false;
    return native.signalPid(-pid, signal);
  } catch {
    return false; // EPERM: nothing in that group is ours to signal
  } finally {
    native.closeFd(fd);
  }
}

/**
 * Stops every process `scan` finds with SIGSTOP, scanning again until no new one appears (a
 * process forked just before its SIGSTOP shows up in the next scan), then SIGKILLs them all and
 * whatever a last scan finds. Each signal goes through a pidfd to the process the scan saw.
 * Returns how many processes were found.
 */
export function freezeThenKill(scan: () => ProcEntry[]): number {
  const seen = new Map<number, string>();
  const stillOurs = sameProcess(seen);
  const rescan = () => scan().map((entry) => (seen.set(entry.pid, entry.start), entry.pid));
  const stopped = new Set<number>();
  for (let round = 0; round < MAX_FREEZE_ROUNDS; round++) {
    const fresh = rescan().filter((pid) => !stopped.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signalIfStill(pid, SIGSTOP, stillOurs);
      stopped.add(pid);
    }
  }
  for (const pid of stopped) signalIfStill(pid, SIGKILL, stillOurs);
  for (const pid of rescan()) signalIfStill(pid, SIGKILL, stillOurs);
  return stopped.size;
}
