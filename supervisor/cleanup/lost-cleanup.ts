/**
 * Cleaning up after a supervisor instance that died (the `cleanup-lost` request, a lock whose
 * holder is found dead, and the sweep when a supervisor starts): its jobs' processes were
 * reparented to init (or the nearest subreaper), so a live supervisor stops them and removes the
 * dead one's cgroup subtree.
 *
 * What names the dead instance comes from others (a holder record anyone with access to the lock
 * directory can write; a runtime), so only what provably belonged to it is touched (STYLE 22):
 * - nothing unless the instance is dead on this boot (pid and start time, src/protocol/identity.ts):
 *   a live supervisor that got the same pid has another start time, so other names;
 * - its cgroup subtree only at `<our cgroup parent>/heph-jobs-<pid>-<start>`, a real directory
 *   owned by our uid (cgroup.kill on it reaches every cgroup below);
 * - its jobs' cgroup v1 limit groups beside our own v1 groups, owned by our uid, only by rmdir
 *   (limit-groups.ts): one still holding a process is left, and nothing in it is killed for that;
 * - processes of our uid, in our pid namespace, whose environment marker names that exact instance,
 *   and whatever descends from those (a pipe of a lost job proves nothing: anyone of our uid can
 *   open `/proc/<pid>/fd/N`);
 * - a leader's process group only while a pidfd pins the leader and it is still the process with
 *   the start time its spawn reported.
 */
import fs from 'node:fs';
import { constants as os } from 'node:os';
import path from 'node:path';
import { ProtocolError } from '../../src/protocol/errors.js';
import type { LostJob, SupervisorIdentity } from '../../src/protocol/messages.js';
import { freezeThenKill, signalGroupOf } from '../containment/signal.js';
import { environThread, livesOn } from '../containment/stragglers.js';
import { bootId, instanceAlive } from '../identity.js';
import { native } from '../native.js';
import { markerPrefix, subtreeName } from '../names.js';
import { removeCgroupTree } from '../platform/cgroup.js';
import { descendantsOf, environHasPrefix, inOurPidNamespace, listProcesses, processOwner, type ProcEntry } from '../platform/procfs.js';
import { removeLimitGroupsOf } from './limit-groups.js';
import { setTimeout as sleep } from 'node:timers/promises';

const SIGKILL = os.signals.SIGKILL;
/** How long we keep trying to see a dead supervisor's processes gone before giving up. */
const LOST_CLEANUP_DEADLINE_MS = 10_000;
/** Pause between rounds: what was killed needs a moment to be reaped by its new parent. */
const ROUND_PAUSE_MS = 5;

export type { LostJob };

/** Where a cleanup may look: the cgroup directory our own subtree is made in (null: none). */
export interface CleanupScope {
  cgroupParent: string | null;
}

/** Where instance `dead`'s subtree would be under our cgroup parent (null: we have none). */
function expectedSubtree(dead: SupervisorIdentity, scope: CleanupScope): string | null {
  return scope.cgroupParent === null ? null : path.join(scope.cgroupParent, subtreeName(dead));
}

/**
 * Refuses (ProtocolError) a request whose job cgroups are not inside the dead instance's subtree
 * under our cgroup parent: the request is refused rather than a stranger's cgroup touched.
 */
export function checkLostPaths(dead: SupervisorIdentity, scope: CleanupScope, jobs: readonly LostJob[]): void {
  const subtree = expectedSubtree(dead, scope);
  for (const job of jobs) {
    if (job.cgroup === null) continue;
    const cgroup = path.resolve(job.cgroup);
    if (subtree === null || !cgroup.startsWith(`${subtree}/`)) {
      throw new ProtocolError(`cleanup-lost: cgroup ${job.cgroup} is not inside the subtree of supervisor ${dead.pid} (${subtree ?? subtreeName(dead)})`);
    }
  }
}

/** The dead instance's subtree when it is there, a real directory (not a link) owned by us. */
function ownedSubtree(dead: SupervisorIdentity, scope: CleanupScope): string | null {
  const subtree = expectedSubtree(dead, scope);
  if (subtree === null) return null;
  try {
    const stat = fs.lstatSync(subtree);
    return stat.isDirectory() && stat.uid === process.getuid!() ? subtree : null;
  } catch {
    return null;
  }
}

/**
 * The processes of `among` (default: all of `table`, the whole process table) whose marker or
 * descriptors we may judge: live, ours (uid), in our pid namespace, and neither us nor one of our ancestors (a runtime that is itself a job of a dead
 * instance is its own business: a sweep it caused must not kill it).
 */
export function judgeable(table: ProcEntry[], among: ProcEntry[] = table): ProcEntry[] {
  const byPid = new Map(table.map((entry) => [entry.pid, entry]));
  const ancestors = new Set<number>();
  for (let pid: number | undefined = process.pid; pid !== undefined && pid > 0 && !ancestors.has(pid); pid = byPid.get(pid)?.ppid) ancestors.add(pid);
  const uid = process.getuid!();
  return among.filter((entry) => !ancestors.has(entry.pid) && livesOn(entry) && processOwner(entry.pid) === uid && inOurPidNamespace(entry.pid));
}

/** The dead instance's processes now: marked with its name, and their descendants. */
function leftoverProcesses(dead: SupervisorIdentity): ProcEntry[] {
  const table = listProcesses();
  const candidates = judgeable(table);
  const prefix = markerPrefix(dead);
  const roots = candidates.filter((entry) => environHasPrefix(entry.pid, prefix, environThread(entry))).map((entry) => entry.pid);
  const below = descendantsOf(roots, table);
  return candidates.filter((entry) => below.has(entry.pid));
}

/** One round: signals what is left; returns how many things were still there. */
function stopOnce(dead: SupervisorIdentity, subtree: string | null, jobs: readonly LostJob[]): number {
  let left = 0;
  if (subtree !== null && native.cgroupPopulated(subtree)) {
    native.cgroupKill(subtree);
    left++;
  }
  for (const job of jobs) {
    if (job.pid !== null && job.start !== null && signalGroupOf(job.pid, job.start, SIGKILL)) left++;
  }
  return left + freezeThenKill(() => leftoverProcesses(dead));
}

/**
 * Kills every remaining process of dead instance `dead`'s jobs and removes its cgroup subtree and
 * its empty v1 limit groups;
 * `jobs`: its leaders not yet reaped when it died (their process groups), as the runtime knew them.
 * Does nothing when `dead` is alive (or is another boot's: nothing of it can be left). Returns
 * whether it acted.
 */
export async function cleanupLostSupervisor(dead: SupervisorIdentity, scope: CleanupScope, jobs: readonly LostJob[] = []): Promise<boolean> {
  if (dead.boot !== bootId() || instanceAlive(dead)) return false;
  const subtree = ownedSubtree(dead, scope);
  const deadline = Date.now() + LOST_CLEANUP_DEADLINE_MS;
  while (stopOnce(dead, subtree, jobs) > 0 && Date.now() < deadline) await sleep(ROUND_PAUSE_MS);
  while (subtree !== null && Date.now() < deadline) {
    if (removeCgroupTree(subtree, native.cgroupRemove)) break;
    await sleep(ROUND_PAUSE_MS);
  }
  // After the stops: its jobs' groups are empty now, unless something not its own is in one.
  removeLimitGroupsOf(dead);
  return true;
}
