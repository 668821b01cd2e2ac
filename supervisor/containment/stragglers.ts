/**
 * Job processes that left their job's session or cgroup (setsid after a double fork, a write to
 * another cgroup.procs): both strategies find them by the job's marker in their environment. A
 * pipe or terminal they hold proves nothing: any process of the user can open
 * `/proc/<pid>/fd/N`, and tmux's server holds its control clients' stdio.
 */
import { native } from '../native.js';
import fs from 'node:fs';
import { childrenOf, environContains, readProcStat, type ProcEntry } from '../platform/procfs.js';
import type { JobIdentity } from './strategy.js';

/** Processes that are not zombies (a zombie has exited; only its parent's wait remains). */
export function alive(entry: ProcEntry): boolean {
  return entry.state !== 'Z' && entry.state !== 'X';
}

/**
 * A thread of the process still runs, though its stat may say Z: the main thread of a process
 * that called pthread_exit is a zombie while the others run on. The thread; null when none does.
 */
export function liveThread(entry: ProcEntry): number | null {
  if (alive(entry)) return entry.pid;
  if (entry.state !== 'Z') return null;
  return otherThreads(entry.pid).find((thread) => {
    const state = readProcStat(entry.pid, thread);
    return state !== null && alive(state);
  }) ?? null;
}

/** The thread whose environment is the process's (undefined: its own, through its pid); see liveThread. */
export function environThread(entry: ProcEntry): number | undefined {
  const thread = liveThread(entry);
  return thread === null || thread === entry.pid ? undefined : thread;
}

/** The process lives (one of its threads does): see liveThread. */
export function livesOn(entry: ProcEntry): boolean {
  return liveThread(entry) !== null;
}

/**
 * Live children of the supervisor carrying the job's marker, other than the leader. Every process
 * that left its job (a new session after a double fork, or another cgroup) is reparented to us,
 * the subreaper, once its parents in the job are gone, so looking at our own children (not at
 * every process on the machine) finds them. Their own children follow once they are killed.
 * Job leaders we spawned and have not reaped are no one's stragglers (each is its own job's), so
 * only the adopted children are read: with 64 jobs running, that spares 64 reads of /proc per look.
 */
export function markedStragglers(job: JobIdentity): ProcEntry[] {
  const found: ProcEntry[] = [];
  for (const pid of adoptedChildren()) {
    if (pid === job.pid) continue;
    const entry = readProcStat(pid);
    // A zombie main thread has no environment to read: a live thread's is the process's.
    if (entry && livesOn(entry) && environContains(pid, job.marker, environThread(entry))) found.push(entry);
  }
  return found;
}

/**
 * Whether a child we adopted is mid-exit: its memory, and with it the marker naming its job, is
 * released while the kernel still closes its files (a big memfd: tens of ms); not yet a zombie.
 * Any job may own it, so none is empty until it is reaped (the reap pokes every job).
 */
export function adoptedChildMidExit(): boolean {
  return adoptedChildren().some((pid) => {
    const entry = readProcStat(pid);
    if (entry === null || !entry.exiting) return false;
    // A leader thread that has exited shows Z while the other threads finish: mid-exit while every
    // one of them is exiting too (one that is not runs on after a pthread_exit of the leader).
    return alive(entry) || otherThreads(pid).every((thread) => readProcStat(pid, thread)?.exiting ?? true);
  });
}

function adoptedChildren(): number[] {
  return native.adoptedChildren() ?? childrenOf(process.pid);
}

/** The process's threads other than its leader ([] once it is gone or single-threaded). */
function otherThreads(pid: number): number[] {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).map(Number).filter((thread) => thread !== pid);
  } catch {
    return [];
  }
}
