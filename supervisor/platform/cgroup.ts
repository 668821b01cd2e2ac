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

export type CgroupProbe = { ok: true; parent: string } | { ok: false; reason: string };

/** Where this process's own cgroup lives on a cgroup2 mount that supports cgroup.kill. */
export function findOwnCgroupDir(): CgroupProbe {
  const own = cgroupOf('self');
  if (own === null) return { ok: false, reason: 'this process is in no cgroup v2 hierarchy (/proc/self/cgroup has no 0:: line)' };
  const mounts = cgroup2Mounts();
  if (mounts.length === 0) return { ok: false, reason: 'no cgroup2 filesystem is mounted' };
  for (const mount of mounts) {
    const dir = path.join(mount, own);
    if (fs.existsSync(path.join(dir, 'cgroup.procs'))) return { ok: true, parent: dir };
  }
  return { ok: false, reason: `own cgroup ${own} not found under the cgroup2 mounts ${mounts.join(', ')}` };
}

/** Removes a cgroup and any cgroups made inside it, deepest first. False while one is still busy. */
export function removeCgroupTree(dir: string, remove: (dir: string) => boolean): boolean {
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
