/**
 * What this supervisor may limit jobs with, found once, at the first limited job: the v1
 * hierarchies it can make groups in (v2 controllers are read per job cgroup), and the tests'
 * switch that leaves every limit to the watchdog.
 */
import type { LimitKind, LimitMechanism } from '../../src/protocol/limits.js';
import { limitGroupName, subtreeName } from '../names.js';
import { findV1Hierarchies, type V1Hierarchies } from './v1-groups.js';
import { enableV2Controllers } from './v2-controllers.js';

export interface LimitsContext {
  v1: V1Hierarchies;
  /** The v2 controllers our job cgroups get (cgroup mode, where our subtree was delegated them). */
  v2: Set<string>;
  /** Tests only (config.testing.limitsBy 'watchdog'): no controller is used. */
  watchdogOnly: boolean;
  /** A job's group name in the v1 hierarchies: the instance's, so a later sweep can tell whose. */
  groupName(job: number): string;
}

let context: LimitsContext | null = null;
let watchdogOnly = false;
let cgroupRoot: string | null = null;

/** Set at hello, before any job starts: the tests' switch, and our cgroup subtree (cgroup mode). */
export function configureLimits(options: { watchdogOnly: boolean; cgroupRoot: string | null }): void {
  ({ watchdogOnly, cgroupRoot } = options);
  context = null;
}

export function limitsContext(): LimitsContext {
  if (context !== null) return context;
  const prefix = subtreeName();
  // The job cgroups get the v2 controllers our subtree was delegated (each job reads its own).
  const v2 = cgroupRoot !== null && !watchdogOnly ? enableV2Controllers(cgroupRoot) : new Set<string>();
  context = {
    v2,
    v1: watchdogOnly ? {} : findV1Hierarchies(`${prefix}-probe`),
    watchdogOnly,
    groupName: limitGroupName,
  };
  return context;
}

/** What holds each kind of limit for a job of this supervisor: what capabilities() tells a host. */
export function limitMechanisms(): Record<LimitKind, LimitMechanism | null> {
  const { v1, v2 } = limitsContext();
  const by = (controller: 'memory' | 'pids' | 'cpu', fallback: LimitMechanism | null): LimitMechanism | null =>
    v2.has(controller) ? 'cgroup-v2' : v1[controller] !== undefined ? 'cgroup-v1' : fallback;
  // The CPU watchdog freezes a job's own cgroup: only in cgroup mode.
  return { memory: by('memory', 'watchdog'), processes: by('pids', 'watchdog'), cpu: by('cpu', cgroupRoot !== null ? 'watchdog' : null) };
}
