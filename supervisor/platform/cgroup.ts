/**
 * Finding a cgroup v2 directory we may create job cgroups in. Detected from the mount table and
 * the process's own cgroup, never assumed: this machine has a hybrid layout with cgroup2 at
 * /sys/fs/cgroup/unified, CI runners usually a pure (and often read-only) v2 tree at /sys/fs/cgroup.
 * See cgroups(7), proc(5) (mountinfo).
 */
import fs from 'node:fs';
import path from 'node:path';
import { cgroupOf } from './procfs.js';

/** Mount points of cgroup2 filesystems, from /proc/self/mountinfo. */
export function cgroup2Mounts(): string[] {
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const mounts: string[] = [];
  for (const line of text.split('\n')) {
    // "36 25 0:31 / /sys/fs/cgroup/unified rw,... - cgroup2 cgroup2 rw"
    const separator = line.indexOf(' - ');
    if (separator < 0) continue;
    const fstype = line.slice(separator + 3).split(' ')[0];
    if (fstype !== 'cgroup2') continue;
    const fields = line.slice(0, separator).split(' ');
    const root = fields[3];
    const mountPoint = fields[4];
    if (root === '/' && mountPoint) mounts.push(mountPoint.replace(/\\040/g, ' '));
  }
  return mounts;
}

export type CgroupProbe = { ok: true; parent: string; reason: string } | { ok: false; reason: string };

/** Why `target` is not writable by us, or null when it is. access(2) answers for our real uid. */
function unwritable(target: string): string | null {
  try {
    fs.accessSync(target, fs.constants.W_OK);
    return null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EROFS') return `${target} is on a read-only mount`;
    let owner = 'unknown';
    try {
      owner = String(fs.statSync(target).uid);
    } catch {
      // gone: the code says enough
    }
    return `${target} is not writable by uid ${process.getuid!()} (it belongs to uid ${owner}; ${code})`;
  }
}

/**
 * Whether we may make job cgroups in `dir` and start processes in them, from our cgroup `own`
 * (`dir` or below it). cgroup v2's "Delegation Containment": a migration, CLONE_INTO_CGROUP
 * included, needs write access to the destination's cgroup.procs (ours: we make the job cgroups,
 * and the kernel gives new cgroups to their creator) and to the common ancestor's, which for a
 * cgroup below `dir` is `dir`'s; making them needs write access to `dir`. Root passes unless the
 * mount is read-only; anyone else where `dir` was delegated to them (systemd's Delegate=yes
 * chowns the directory, cgroup.procs, cgroup.subtree_control and cgroup.threads; so may root).
 *
 * Nothing here enables a controller, so the "no internal processes" rule (a cgroup holds
 * processes or enables controllers for its children, never both) never binds: job cgroups below
 * a cgroup that holds processes (ours, the runtime's, the user's shell) may hold processes, and
 * the supervisor has no need to move itself into a leaf first.
 */
function delegationAt(dir: string, own: string): CgroupProbe {
  const why = unwritable(dir) ?? unwritable(path.join(dir, 'cgroup.procs'));
  if (why !== null) return { ok: false, reason: why };
  const uid = process.getuid!();
  const found = uid === 0 ? `writable cgroup v2 tree at ${dir}` : `cgroup v2 subtree at ${dir} delegated to uid ${uid} (it may write the directory and its cgroup.procs)`;
  const where = own === dir ? '' : `; this process is in ${own}, which it may not write`;
  return { ok: true, parent: dir, reason: found + where };
}

/**
 * The cgroup we make our subtree in: our own cgroup when we may use it, else the nearest
 * ancestor on the same mount that was delegated to us (a leaf made for us inside a delegated
 * subtree, as systemd's DelegateSubgroup= makes, may belong to someone else). Never above the
 * mount, and never a cgroup we may not write.
 */
export function findOwnCgroupDir(): CgroupProbe {
  const own = cgroupOf('self');
  if (own === null) return { ok: false, reason: 'this process is in no cgroup v2 hierarchy (/proc/self/cgroup has no 0:: line)' };
  const mounts = cgroup2Mounts();
  if (mounts.length === 0) return { ok: false, reason: 'no cgroup2 filesystem is mounted' };
  const mount = mounts.find((candidate) => fs.existsSync(path.join(candidate, own, 'cgroup.procs')));
  if (mount === undefined) return { ok: false, reason: `own cgroup ${own} not found under the cgroup2 mounts ${mounts.join(', ')}` };
  const ownDir = path.join(mount, own);
  let first: CgroupProbe | null = null;
  for (let dir = ownDir; ; dir = path.dirname(dir)) {
    const probe = delegationAt(dir, ownDir);
    if (probe.ok) return probe;
    first ??= probe;
    if (dir === mount || !dir.startsWith(`${mount}/`)) break;
  }
  return { ok: false, reason: `${first!.reason}, nor is any cgroup above it up to ${mount}: no cgroup subtree is delegated to this user` };
}

/** Removes a cgroup and any cgroups made inside it, deepest first. False while one is still busy. */
export function removeCgroupTree(dir: string, remove: (dir: string) => boolean): boolean {
  // A job's cgroup rarely has cgroups inside: one rmdir is then all (EBUSY, false, when it has).
  if (remove(dir)) return true;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return true;
  }
  let removed = true;
  for (const entry of entries) if (entry.isDirectory()) removed = removeCgroupTree(path.join(dir, entry.name), remove) && removed;
  return remove(dir) && removed;
}

/** A small cgroup file's text, or null when it cannot be read (no such controller, the group gone). */
export function readCgroupFile(dir: string, name: string): string | null {
  try {
    return fs.readFileSync(path.join(dir, name), 'latin1');
  } catch {
    return null;
  }
}
