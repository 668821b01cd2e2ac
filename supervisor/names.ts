/**
 * The names that let a person (and a leak check, and a later supervisor) see what belongs to
 * which supervisor (SPEC 2): its process title, its cgroup subtree with one child cgroup per job,
 * and the marker every process of a job carries in its environment.
 */
import path from 'node:path';

export const PROCESS_TITLE = 'heph-jobs supervisor';

/** The cgroup subtree of supervisor `pid`, made under its cgroup parent. */
export function subtreeName(pid: number): string {
  return `heph-jobs-${pid}`;
}

/** Job `job`'s cgroup, inside its supervisor's subtree. */
export function jobCgroupName(job: number): string {
  return `job-${job}`;
}

/** `HEPH_JOB=<supervisor pid>:`: how every marker of supervisor `pid` starts. */
export function markerPrefix(pid: number): string {
  return `HEPH_JOB=${pid}:`;
}

/** The environment entry every process of job `job` of this supervisor carries. */
export function jobMarker(job: number, pid: number = process.pid): string {
  return `${markerPrefix(pid)}${job}`;
}

/**
 * Supervisor `pid`'s subtree as it appears in `cgroup` (the subtree itself, or a cgroup inside
 * it), matched by whole path components; null when `cgroup` is not within such a subtree.
 */
export function subtreeOf(cgroup: string, pid: number): string | null {
  const parts = path.resolve(cgroup).split('/');
  const at = parts.indexOf(subtreeName(pid));
  return at < 0 ? null : parts.slice(0, at + 1).join('/');
}
