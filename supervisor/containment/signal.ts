/**
 * Signals that reach only the process they were meant for. A pid is only a number: once its
 * process is reaped the kernel may give it to a stranger, so every signal here goes through a
 * pidfd opened before the check that the pid is still ours.
 */
import { native } from '../native.js';
import { processStartTime, readProcStat } from '../platform/procfs.js';
import type { JobIdentity } from './strategy.js';

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
