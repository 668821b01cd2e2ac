/**
 * Limits through the job's own cgroup v2 controllers, where its parent delegates them: memory.max
 * with memory.oom.group (the kernel stops the job whole), memory.high a little below it (the job
 * is slowed, under pressure, before that), pids.max, cpu.max. See the kernel's cgroup-v2.rst.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { JobLimits } from '../../src/protocol/limits.js';
import { readCgroupFile } from '../platform/cgroup.js';
import { field } from './v1-groups.js';

/** CFS bandwidth period, as for v1 and systemd's CPUQuota=. */
const CPU_PERIOD_US = 100_000;
/** memory.high as a share of memory.max: reclaim and throttling start there, before the stop. */
const HIGH_SHARE = 0.9;

export type V2Controller = 'memory' | 'pids' | 'cpu';

/** The controllers a cgroup has (its cgroup.controllers: what its parent's subtree_control enables). */
export function v2ControllersOf(dir: string): Set<string> {
  return new Set((readCgroupFile(dir, 'cgroup.controllers') ?? '').trim().split(/\s+/).filter(Boolean));
}

/**
 * Enables for the job cgroups under `subtree` the controllers it has itself (its parent delegated
 * them); each one the kernel refuses is left off, and jobs fall back for it. What it enabled.
 */
export function enableV2Controllers(subtree: string): Set<string> {
  const enabled = new Set<string>();
  for (const controller of v2ControllersOf(subtree)) {
    if (controller !== 'memory' && controller !== 'pids' && controller !== 'cpu') continue;
    try {
      fs.writeFileSync(path.join(subtree, 'cgroup.subtree_control'), `+${controller}`);
      enabled.add(controller);
    } catch {
      // Not ours to enable (no delegation of it): the v1 groups or the watchdog hold that limit.
    }
  }
  return enabled;
}

/** Writes `limits` for the controllers of `controllers` into the job's cgroup `dir`, before the leader is born in it. */
export function writeV2Limits(dir: string, limits: JobLimits, controllers: readonly V2Controller[]): void {
  for (const controller of controllers) {
    if (controller === 'memory') {
      const max = limits.memoryBytes!;
      fs.writeFileSync(path.join(dir, 'memory.high'), String(Math.floor(max * HIGH_SHARE)));
      fs.writeFileSync(path.join(dir, 'memory.max'), String(max));
      fs.writeFileSync(path.join(dir, 'memory.oom.group'), '1');
    } else if (controller === 'pids') {
      fs.writeFileSync(path.join(dir, 'pids.max'), String(limits.processes));
    } else {
      fs.writeFileSync(path.join(dir, 'cpu.max'), `${Math.round((limits.cpuMillis! * CPU_PERIOD_US) / 1000)} ${CPU_PERIOD_US}`);
    }
  }
}

/** What a job's v2 controllers say: see readV2Limits. */
export interface V2Reading {
  oomKilled: boolean;
  peakMemoryBytes: number | null;
  forkFailures: number | null;
  throttledMs: number | null;
  /** Times it went past memory.high and was reclaimed and slowed (memory.events `high`). */
  slowedAtMemoryHigh: number | null;
  /** Share of the last 10 s some of its tasks stalled on memory, in % (memory.pressure `some avg10`). */
  memoryPressure: number | null;
}

/** The `some avg10=` of a pressure file, in %. */
function pressureAvg10(text: string | null): number | null {
  const match = text === null ? null : /^some avg10=([\d.]+)/m.exec(text);
  return match ? Number(match[1]) : null;
}

/** What the job's cgroup says now: an OOM kill (of the group), the peak, refused forks, throttled time, and how much memory.high slowed it. */
export function readV2Limits(dir: string): V2Reading {
  const events = readCgroupFile(dir, 'memory.events');
  const peak = readCgroupFile(dir, 'memory.peak');
  const throttledUs = field(readCgroupFile(dir, 'cpu.stat'), 'throttled_usec');
  return {
    oomKilled: (field(events, 'oom_group_kill') ?? 0) > 0 || (field(events, 'oom_kill') ?? 0) > 0,
    peakMemoryBytes: peak === null ? null : Number(peak.trim()),
    forkFailures: field(readCgroupFile(dir, 'pids.events'), 'max'),
    throttledMs: throttledUs === null ? null : Math.round(throttledUs / 1000),
    slowedAtMemoryHigh: field(events, 'high'),
    memoryPressure: pressureAvg10(readCgroupFile(dir, 'memory.pressure')),
  };
}
