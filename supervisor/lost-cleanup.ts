/**
 * Cleaning up after a supervisor that died: its jobs' processes were reparented to init (or the
 * nearest subreaper), so the runtime stops them itself, through their cgroups where it had them,
 * else through their process groups and the marker in their environment.
 */
import fs from 'node:fs';
import { constants as os } from 'node:os';
import { native } from './native.js';
import { listProcesses } from './platform/procfs.js';
import { removeCgroupTree } from './platform/cgroup.js';

const SIGKILL = os.signals.SIGKILL;
/** How long we keep trying to see a dead supervisor's processes gone before giving up. */
const LOST_CLEANUP_DEADLINE_MS = 10_000;

export interface LostJob {
  pid: number | null;
  cgroup: string | null;
}

function markedBy(supervisorPid: number): number[] {
  const prefix = Buffer.from(`HEPH_JOB=${supervisorPid}:`);
  const found: number[] = [];
  for (const entry of listProcesses()) {
    if (entry.state === 'Z') continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry.pid}/environ`);
      let start = 0;
      while (start < environ.length) {
        if (environ.compare(prefix, 0, prefix.length, start, Math.min(environ.length, start + prefix.length)) === 0) {
          found.push(entry.pid);
          break;
        }
        const end = environ.indexOf(0, start);
        if (end < 0) break;
        start = end + 1;
      }
    } catch {
      // gone, or not readable: not one of ours
    }
  }
  return found;
}

function stopOnce(supervisorPid: number, jobs: LostJob[]): number {
  let left = 0;
  for (const job of jobs) {
    if (job.cgroup && native.cgroupPopulated(job.cgroup)) {
      native.cgroupKill(job.cgroup);
      left++;
    }
    if (job.pid !== null) native.signalPid(-job.pid, SIGKILL);
  }
  for (const pid of markedBy(supervisorPid)) {
    native.signalPid(pid, SIGKILL);
    left++;
  }
  return left;
}

/** Kills every remaining process of a dead supervisor's jobs and removes its cgroups. */
export async function cleanupLostSupervisor(supervisorPid: number, cgroupRoot: string | null, jobs: LostJob[]): Promise<void> {
  const deadline = Date.now() + LOST_CLEANUP_DEADLINE_MS;
  while (stopOnce(supervisorPid, jobs) > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (cgroupRoot) {
    while (Date.now() < deadline) {
      if (removeCgroupTree(cgroupRoot, native.cgroupRemove)) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}
