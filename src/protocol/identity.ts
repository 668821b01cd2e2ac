/**
 * The name of one supervisor instance (STYLE 22: identity is never a bare number). A pid is
 * reused within minutes on a busy machine; a pid together with that process's start time (field 22
 * of /proc/PID/stat, clock ticks since boot) names one process for the whole boot, and the boot id
 * says which boot. The runtime learns it from the hello reply and names a dead supervisor by it in
 * `cleanup-lost`; lock holder records carry it; the supervisor puts `<pid>-<start>` in its cgroup
 * subtree's name and in every job process's marker, so what a dead instance left is told apart
 * from what a live one (perhaps with the same pid) owns.
 */

export interface SupervisorIdentity {
  pid: number;
  /** Start time of the supervisor process, clock ticks since boot, as /proc prints it (digits). */
  start: string;
  /** /proc/sys/kernel/random/boot_id of the boot it ran in. */
  boot: string;
}

/** Decimal digits without a sign or a leading zero: how /proc prints a start time. */
export const START_PATTERN = /^(0|[1-9][0-9]{0,19})$/;
/** A boot id as the kernel prints it (a UUID). */
export const BOOT_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Largest pid Linux hands out (PID_MAX_LIMIT, 2^22). */
export const PID_MAX = 4 * 1024 * 1024;

/** `<pid>-<start>`: the instance's name in cgroup paths and job markers. */
export function instanceName(identity: Pick<SupervisorIdentity, 'pid' | 'start'>): string {
  return `${identity.pid}-${identity.start}`;
}

/**
 * The identity in `value` when every field is well formed, else null. Holder records and other
 * files are written by processes we do not trust: a name built from them goes into paths and
 * /proc lookups, so nothing but a whole pid, digits and a UUID passes.
 */
export function parseIdentity(value: unknown): SupervisorIdentity | null {
  if (typeof value !== 'object' || value === null) return null;
  const { pid, start, boot } = value as Record<string, unknown>;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid < 1 || pid > PID_MAX) return null;
  if (typeof start !== 'string' || !START_PATTERN.test(start)) return null;
  if (typeof boot !== 'string' || !BOOT_PATTERN.test(boot)) return null;
  return { pid, start, boot };
}

/** The instance named by `<pid>-<start>` (a cgroup name's or a marker's part), or null. */
export function parseInstanceName(name: string): Pick<SupervisorIdentity, 'pid' | 'start'> | null {
  const dash = name.indexOf('-');
  if (dash < 0) return null;
  const pidText = name.slice(0, dash);
  const start = name.slice(dash + 1);
  if (!/^[1-9][0-9]{0,6}$/.test(pidText) || !START_PATTERN.test(start)) return null;
  const pid = Number(pidText);
  return pid <= PID_MAX ? { pid, start } : null;
}
