/**
 * Limits through cgroup v1 hierarchies (a hybrid or legacy host, where the v2 tree holds no
 * controllers): a group per job and controller (memory, pids, cpu) beside the supervisor's own,
 * which the leader joins before it execs (native spawn's joinGroups). See cgroups(7) and the
 * kernel's cgroup-v1 memory.rst, pids.rst and sched-bwc.rst.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { JobLimits } from '../../src/protocol/limits.js';
import { native } from '../native.js';
import { readCgroupFile } from '../platform/cgroup.js';

export type V1Controller = 'memory' | 'pids' | 'cpu';
const CONTROLLERS: readonly V1Controller[] = ['memory', 'pids', 'cpu'];

/** CFS bandwidth period: quotas are per 100 ms, as systemd's CPUQuota= sets them. */
const CPU_PERIOD_US = 100_000;

/** The directory of our own group in each v1 hierarchy we may make groups in. */
export type V1Hierarchies = Partial<Record<V1Controller, string>>;

/**
 * Our group's directory in each v1 hierarchy of `controllers` where a group can be made there
 * (probed with a mkdir), from /proc/self/cgroup and /proc/self/mountinfo.
 */
export function findV1Hierarchies(probeName: string): V1Hierarchies {
  const found: V1Hierarchies = {};
  let cgroups: string;
  let mounts: string;
  try {
    cgroups = fs.readFileSync('/proc/self/cgroup', 'utf8');
    mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return found;
  }
  for (const line of cgroups.split('\n')) {
    const [, list, own] = line.split(':');
    if (!list || own === undefined) continue;
    for (const controller of list.split(',')) {
      if (!CONTROLLERS.includes(controller as V1Controller)) continue;
      const dir = ownGroupDir(mounts, controller, own);
      if (dir !== null && canMakeGroups(dir, probeName)) found[controller as V1Controller] = dir;
    }
  }
  return found;
}

/** Where our group `own` (as /proc/self/cgroup names it) is, in the v1 mount of `controller`. */
function ownGroupDir(mountinfo: string, controller: string, own: string): string | null {
  for (const line of mountinfo.split('\n')) {
    // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS`
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const [type, , superOptions] = after.split(' ');
    if (type !== 'cgroup' || !superOptions?.split(',').includes(controller)) continue;
    const [, , , root, mountpoint] = before.split(' ');
    if (!root || !mountpoint) continue;
    // A mount of a group below the hierarchy's root (in a container) shows paths from that group.
    const relative = root === '/' ? own : own.startsWith(root) ? own.slice(root.length) : null;
    if (relative !== null) return path.join(mountpoint, relative);
  }
  return null;
}

function canMakeGroups(dir: string, probeName: string): boolean {
  const probe = path.join(dir, probeName);
  try {
    fs.mkdirSync(probe);
    fs.rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

/** A job's groups, one per controller that holds one of its limits. */
export type V1Groups = Partial<Record<V1Controller, string>>;

/**
 * Makes the job's group in each of `controllers` and writes its limit there. Memory: the kernel's
 * OOM killer is turned off for the group, so a job at its limit waits, and the supervisor stops it
 * whole (v1 has no memory.oom.group). Throws, having removed what it made, when a write fails.
 */
export function makeV1Groups(name: string, limits: JobLimits, hierarchies: V1Hierarchies, controllers: V1Controller[]): V1Groups {
  const groups: V1Groups = {};
  try {
    for (const controller of controllers) {
      const dir = path.join(hierarchies[controller]!, name);
      fs.mkdirSync(dir);
      groups[controller] = dir;
      if (controller === 'memory') {
        fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        fs.writeFileSync(path.join(dir, 'memory.oom_control'), '1');
      } else if (controller === 'pids') {
        fs.writeFileSync(path.join(dir, 'pids.max'), String(limits.processes));
      } else {
        fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
        fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), String(Math.round((limits.cpuMillis! * CPU_PERIOD_US) / 1000)));
      }
    }
  } catch (error) {
    removeV1Groups(groups);
    throw error;
  }
  return groups;
}

/** Removes the job's groups; false while one still has a process (rmdir: EBUSY). */
export function removeV1Groups(groups: V1Groups): boolean {
  let removed = true;
  for (const dir of Object.values(groups)) {
    if (!native.cgroupRemove(dir)) removed = false;
  }
  return removed;
}

/**
 * What the job's groups say now: a process waiting at the memory limit `memoryBytes`, the peak,
 * refused forks, throttled time. memory.oom_control is read only once the peak has come within 1%
 * of the limit: a job waits only at the limit itself, and a look is made 10 times a second.
 */
export function readV1Groups(groups: V1Groups, memoryBytes: number | null): { atMemoryLimit: boolean; peakMemoryBytes: number | null; forkFailures: number | null; throttledMs: number | null } {
  const memory = groups.memory;
  const peakText = memory ? readCgroupFile(memory, 'memory.max_usage_in_bytes') : null;
  const peak = peakText === null ? null : Number(peakText.trim());
  const nearLimit = peak !== null && memoryBytes !== null && peak >= memoryBytes * 0.99;
  const oom = memory && nearLimit ? readCgroupFile(memory, 'memory.oom_control') : null;
  const pidsEvents = groups.pids ? readCgroupFile(groups.pids, 'pids.events') : null;
  const cpuStat = groups.cpu ? readCgroupFile(groups.cpu, 'cpu.stat') : null;
  const throttledNs = field(cpuStat, 'throttled_time');
  return {
    atMemoryLimit: field(oom, 'under_oom') === 1,
    peakMemoryBytes: peak,
    forkFailures: field(pidsEvents, 'max'),
    throttledMs: throttledNs === null ? null : Math.round(throttledNs / 1e6),
  };
}

/** The number after `key ` on its own line of a flat-keyed cgroup file. */
export function field(text: string | null, key: string): number | null {
  if (text === null) return null;
  const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(text);
  return match ? Number(match[1]) : null;
}
