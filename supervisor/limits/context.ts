/**
 * What this supervisor may limit jobs with, found once, at the first limited job: the v1
 * hierarchies it can make groups in (v2 controllers are read per job cgroup), and the tests'
 * switch that leaves every limit to the watchdog.
 */
import { subtreeName } from '../names.js';
import { findV1Hierarchies, type V1Hierarchies } from './v1-groups.js';
import { enableV2Controllers } from './v2-controllers.js';

export interface LimitsContext {
  v1: V1Hierarchies;
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
  if (cgroupRoot !== null && !watchdogOnly) enableV2Controllers(cgroupRoot);
  context = {
    v1: watchdogOnly ? {} : findV1Hierarchies(`${prefix}-probe`),
    watchdogOnly,
    groupName: (job) => `${prefix}-job${job}`,
  };
  return context;
}
