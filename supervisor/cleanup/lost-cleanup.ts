/**
 * Cleaning up after a supervisor that died (the `cleanup-lost` request, and a lock whose holder is
 * found dead): its jobs' processes were reparented to init (or the nearest subreaper), so a live
 * supervisor stops them, through their cgroups where it had them, else through their process
 * groups and the marker in their environment, then removes the dead one's cgroup subtree.
 *
 * A pid is only a number (STYLE 22): by the time this runs, the dead supervisor's pid may name
 * another process, even another supervisor whose subtree and markers look the same. So what is
 * named by the dead pid is touched only while no live supervisor has that pid, and processes below
 * whatever now has that pid are never taken for the dead one's.
 */
import fs from 'node:fs';
import { constants as os } from 'node:os';
import path from 'node:path';
import { ProtocolError } from '../../src/protocol/errors.js';
import type { LostJob } from '../../src/protocol/messages.js';
import { native } from '../native.js';
import { markerPrefix, PROCESS_TITLE, subtreeName, subtreeOf } from '../names.js';
import { removeCgroupTree } from '../platform/cgroup.js';
import { descendantsOf, environHasPrefix, listProcesses, readProcStat } from '../platform/procfs.js';

const SIGKILL = os.signals.SIGKILL;
/** How long we keep trying to see a dead supervisor's processes gone before giving up. */
const LOST_CLEANUP_DEADLINE_MS = 10_000;
/** Pause between rounds: what was killed needs a moment to be reaped by its new parent. */
const ROUND_PAUSE_MS = 5;

export type { LostJob };

/**
 * The first path in a cleanup request that is not part of supervisor `pid`'s cgroup subtree, as
 * a ProtocolError; the request is refused rather than a stranger's cgroup stopped.
 */
export function checkLostPaths(pid: number, cgroupRoot: string | null, jobs: readonly LostJob[]): void {
  if (cgroupRoot !== null && path.basename(cgroupRoot) !== subtreeName(pid)) {
    throw new ProtocolError(`cleanup-lost: cgroupRoot ${cgroupRoot} is not the subtree of supervisor ${pid} (${subtreeName(pid)})`);
  }
  for (const job of jobs) {
    if (job.cgroup !== null && subtreeOf(job.cgroup, pid) === null) {
      throw new ProtocolError(`cleanup-lost: cgroup ${job.cgroup} is not inside the subtree of supervisor ${pid}`);
    }
  }
}

/** Whether `pid` now names a live supervisor (a recycled pid): then its subtree is its own. */
function liveSupervisor(pid: number): boolean {
  const state = readProcStat(pid)?.state;
  if (state === undefined || state === 'Z' || state === 'X') return false;
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').startsWith(PROCESS_TITLE);
  } catch {
    return false;
  }
}

/**
 * Whether job leader `leader`'s process group is still the job's: while the leader is not reaped
 * (a zombie included) the number is its; once gone, the kernel does not hand the number out
 * while the group has members. A live process with that pid and without the marker is a stranger.
 */
function groupStillOurs(leader: number, prefix: string): boolean {
  const state = readProcStat(leader)?.state;
  return state === undefined || state === 'Z' || state === 'X' || environHasPrefix(leader, prefix);
}

/** One round: signals what is left; returns how many things were still there. */
function stopOnce(pid: number, jobs: readonly LostJob[]): number {
  const prefix = markerPrefix(pid);
  const ownCgroups = !liveSupervisor(pid);
  let left = 0;
  for (const job of jobs) {
    if (ownCgroups && job.cgroup !== null && subtreeOf(job.cgroup, pid) !== null && native.cgroupPopulated(job.cgroup)) {
      native.cgroupKill(job.cgroup);
      left++;
    }
    if (job.pid !== null && groupStillOurs(job.pid, prefix)) native.signalPid(-job.pid, SIGKILL);
  }
  const table = listProcesses();
  // Whatever now has the dead pid (a recycled one) owns what is below it, markers or not.
  const belowNamesake = descendantsOf([pid], table);
  for (const entry of table) {
    if (entry.state === 'Z' || entry.state === 'X' || belowNamesake.has(entry.pid) || entry.pid === process.pid) continue;
    if (!environHasPrefix(entry.pid, prefix)) continue;
    native.signalPid(entry.pid, SIGKILL);
    left++;
  }
  return left;
}

/** Kills every remaining process of dead supervisor `pid`'s jobs and removes its cgroup subtree. */
export async function cleanupLostSupervisor(pid: number, cgroupRoot: string | null, jobs: readonly LostJob[]): Promise<void> {
  const deadline = Date.now() + LOST_CLEANUP_DEADLINE_MS;
  while (stopOnce(pid, jobs) > 0 && Date.now() < deadline) await pause();
  if (cgroupRoot === null || path.basename(cgroupRoot) !== subtreeName(pid)) return;
  while (Date.now() < deadline && !liveSupervisor(pid)) {
    if (removeCgroupTree(cgroupRoot, native.cgroupRemove)) break;
    await pause();
  }
}

function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ROUND_PAUSE_MS));
}
