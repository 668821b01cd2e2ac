/**
 * The names that let a person (and a leak check, and a later supervisor) see what belongs to
 * which supervisor instance (SPEC 2): its process title, its cgroup subtree with one child cgroup
 * per job, and the marker every process of a job carries in its environment. Each names the
 * instance by `<pid>-<start>` (src/protocol/identity.ts), never by the pid alone: a later
 * supervisor with a recycled pid has other names. A pid means something only in its pid
 * namespace: a marker is read only from processes of ours, but the cgroup tree is shared by every
 * namespace on the machine, so a subtree's name carries the namespace too.
 */
import { instanceName, parseInstanceName, type SupervisorIdentity } from '../src/protocol/identity.js';
import { ownIdentity } from './identity.js';
import { ownPidNamespace } from './platform/procfs.js';

export const PROCESS_TITLE = 'heph-jobs supervisor';

type Instance = Pick<SupervisorIdentity, 'pid' | 'start'>;

const SUBTREE_PREFIX = 'heph-jobs-';
/** Between the instance and its pid namespace's inode in a subtree's name. */
const NAMESPACE_INFIX = '-pidns';
/** The environment variable of the marker. */
export const MARKER_KEY = 'HEPH_JOB=';
/** Between the instance's subtree name and the job in a v1 limit group's name (limits/context.ts). */
const LIMIT_GROUP_INFIX = '-job';
/** A job number as markers and limit groups print it. */
const JOB_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

/**
 * The cgroup subtree of supervisor instance `instance` of our pid namespace, made under its cgroup
 * parent: `heph-jobs-<pid>-<start>-pidns<inode>`.
 */
export function subtreeName(instance: Instance = ownIdentity()): string {
  return `${SUBTREE_PREFIX}${instanceName(instance)}${NAMESPACE_INFIX}${ownPidNamespace()}`;
}

/**
 * The instance whose subtree is named `name`, or null: not a subtree's name, or the subtree of a
 * supervisor in another pid namespace. Its pid cannot be judged from here (to /proc, every instance
 * outside looks dead, and a pid of a namespace below names some other process of ours).
 */
export function ownNamespaceSubtreeInstance(name: string): Instance | null {
  if (!name.startsWith(SUBTREE_PREFIX)) return null;
  const infix = name.lastIndexOf(NAMESPACE_INFIX);
  if (infix < 0 || name.slice(infix + NAMESPACE_INFIX.length) !== ownPidNamespace()) return null;
  return parseInstanceName(name.slice(SUBTREE_PREFIX.length, infix));
}

/** Job `job`'s group in each cgroup v1 hierarchy that holds one of its limits: `<subtree name>-job<N>`. */
export function limitGroupName(job: number): string {
  return `${subtreeName()}${LIMIT_GROUP_INFIX}${job}`;
}

/**
 * The instance and job whose cgroup v1 limit group is named `name` (`<subtree name>-job<N>`), or
 * null: not such a name, or another pid namespace's (judged as ownNamespaceSubtreeInstance does).
 */
export function ownNamespaceLimitGroup(name: string): { instance: Instance; job: number } | null {
  const infix = name.lastIndexOf(LIMIT_GROUP_INFIX);
  const job = name.slice(infix + LIMIT_GROUP_INFIX.length);
  if (infix < 0 || !JOB_PATTERN.test(job)) return null;
  const instance = ownNamespaceSubtreeInstance(name.slice(0, infix));
  return instance === null ? null : { instance, job: Number(job) };
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
  if (colon < 0 || !JOB_PATTERN.test(rest.slice(colon + 1))) return null;
  const instance = parseInstanceName(rest.slice(0, colon));
  return instance === null ? null : { instance, job: Number(rest.slice(colon + 1)) };
}
