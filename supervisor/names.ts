/**
 * The names that let a person (and a leak check, and a later supervisor) see what belongs to
 * which supervisor instance (SPEC 2): its process title, its cgroup subtree with one child cgroup
 * per job, and the marker every process of a job carries in its environment. Each names the
 * instance by `<pid>-<start>` (src/protocol/identity.ts), never by the pid alone: a later
 * supervisor with a recycled pid has other names.
 */
import { instanceName, parseInstanceName, type SupervisorIdentity } from '../src/protocol/identity.js';
import { ownIdentity } from './identity.js';

export const PROCESS_TITLE = 'heph-jobs supervisor';

type Instance = Pick<SupervisorIdentity, 'pid' | 'start'>;

const SUBTREE_PREFIX = 'heph-jobs-';
/** The environment variable of the marker. */
export const MARKER_KEY = 'HEPH_JOB=';

/** The cgroup subtree of supervisor instance `instance`, made under its cgroup parent. */
export function subtreeName(instance: Instance = ownIdentity()): string {
  return `${SUBTREE_PREFIX}${instanceName(instance)}`;
}

/** The instance whose subtree is named `name` (`heph-jobs-<pid>-<start>`), or null. */
export function subtreeInstance(name: string): Instance | null {
  return name.startsWith(SUBTREE_PREFIX) ? parseInstanceName(name.slice(SUBTREE_PREFIX.length)) : null;
}

/** Job `job`'s cgroup, inside its supervisor's subtree. */
export function jobCgroupName(job: number): string {
  return `job-${job}`;
}

/** `HEPH_JOB=<pid>-<start>:`: how every marker of instance `instance` starts. */
export function markerPrefix(instance: Instance = ownIdentity()): string {
  return `${MARKER_KEY}${instanceName(instance)}:`;
}

/** The environment entry every process of job `job` of this supervisor carries. */
export function jobMarker(job: number, instance: Instance = ownIdentity()): string {
  return `${markerPrefix(instance)}${job}`;
}

/** The instance and job a marker entry (`HEPH_JOB=<pid>-<start>:<job>`) names, or null. */
export function parseMarker(entry: string): { instance: Instance; job: number } | null {
  if (!entry.startsWith(MARKER_KEY)) return null;
  const rest = entry.slice(MARKER_KEY.length);
  const colon = rest.indexOf(':');
  if (colon < 0 || !/^(0|[1-9][0-9]{0,15})$/.test(rest.slice(colon + 1))) return null;
  const instance = parseInstanceName(rest.slice(0, colon));
  return instance === null ? null : { instance, job: Number(rest.slice(colon + 1)) };
}
