/**
 * How the supervisor finds and stops every process of a job (SPEC 7). Two strategies behind one
 * interface (strategy.ts): cgroup.ts where a writable cgroup v2 tree exists, process-group.ts
 * where none does; choose.ts picks one at hello. signal.ts sends signals that reach only the
 * process a scan saw; stragglers.ts finds job processes that left their session or cgroup.
 */
export { cgroupParentOf, chooseContainment } from './choose.js';
export type { ContainmentStrategy, JobIdentity } from './strategy.js';
