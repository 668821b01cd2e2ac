/**
 * Job processes that left their job's session or cgroup (setsid after a double fork, a write to
 * another cgroup.procs): both strategies find them by the job's marker in their environment, or
 * by one of the job's pipes (or its terminal) among their descriptors (`env -i setsid -f CMD`
 * clears the one and keeps the other).
 */
import { childrenOf, environContains, holdsFile, holdsPipe, readProcStat, type ProcEntry } from '../platform/procfs.js';
import type { JobIdentity } from './strategy.js';

/** Processes that are not zombies (a zombie has exited; only its parent's wait remains). */
export function alive(entry: ProcEntry): boolean {
  return entry.state !== 'Z' && entry.state !== 'X';
}

function holdsTerminal(pid: number, job: JobIdentity): boolean {
  return job.terminal !== undefined && holdsFile(pid, job.terminal);
}

/**
 * Live children of the supervisor carrying the job's marker or holding one of its pipes, other
 * than the leader. Every process
 * that left its job (a new session after a double fork, or another cgroup) is reparented to us,
 * the subreaper, once its parents in the job are gone, so looking at our own children (not at
 * every process on the machine) finds them. Their own children follow once they are killed.
 */
export function markedStragglers(job: JobIdentity): ProcEntry[] {
  const found: ProcEntry[] = [];
  for (const pid of childrenOf(process.pid)) {
    if (pid === job.pid) continue;
    const entry = readProcStat(pid);
    if (entry && alive(entry) && (environContains(pid, job.marker) || holdsPipe(pid, job.pipes) || holdsTerminal(pid, job))) found.push(entry);
  }
  return found;
}
