/**
 * The cgroup v1 limit groups of dead instances (limits/v1-groups.ts): a supervisor removes its
 * jobs' groups at their cleanup, so a SIGKILLed one leaves them behind, in each v1 hierarchy beside
 * our own group. Only names of our pid namespace's instances are read (another namespace's pids
 * mean other processes here); a group is only rmdir'ed: one still holding a process stays (EBUSY).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { SupervisorIdentity } from '../../src/protocol/identity.js';
import { findV1Hierarchies } from '../limits/v1-groups.js';
import { native } from '../native.js';
import { ownNamespaceLimitGroup, subtreeName } from '../names.js';

type Instance = Pick<SupervisorIdentity, 'pid' | 'start'>;

/** Our group in each v1 hierarchy where we may make (so remove) groups: found once, as limits do. */
let hierarchies: string[] | null = null;

function hierarchyDirs(): string[] {
  hierarchies ??= Object.values(findV1Hierarchies(`${subtreeName()}-probe`));
  return hierarchies;
}

/** Every limit group of an instance of our pid namespace there now, owned by our uid. */
export function limitGroups(): { dir: string; instance: Instance }[] {
  const found: { dir: string; instance: Instance }[] = [];
  for (const parent of hierarchyDirs()) {
    let entries: fs.Dirent[] = [];
    try {
      entries = fs.readdirSync(parent, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const parsed = entry.isDirectory() ? ownNamespaceLimitGroup(entry.name) : null;
      const dir = path.join(parent, entry.name);
      if (parsed !== null && ownedBy(dir, process.getuid!())) found.push({ dir, instance: parsed.instance });
    }
  }
  return found;
}

function ownedBy(dir: string, uid: number): boolean {
  try {
    return fs.lstatSync(dir).uid === uid;
  } catch {
    return false;
  }
}

/** Removes the empty limit groups of instance `dead`, which the caller has found dead. */
export function removeLimitGroupsOf(dead: Instance): void {
  for (const group of limitGroups()) {
    if (group.instance.pid !== dead.pid || group.instance.start !== dead.start) continue;
    try {
      native.cgroupRemove(group.dir);
    } catch {
      // Not removable by us (EACCES, EPERM): left as it is.
    }
  }
}
