/** Which containment strategy a supervisor uses (SPEC 7), decided once at hello. */
import fs from 'node:fs';
import path from 'node:path';
import { native } from '../native.js';
import { findOwnCgroupDir } from '../platform/cgroup.js';
import type { ContainmentChoice } from '../../src/protocol/messages.js';
import { subtreeName } from '../names.js';
import { CgroupStrategy } from './cgroup.js';
import { ProcessGroupStrategy } from './process-group.js';
import type { ContainmentStrategy } from './strategy.js';

/** Picks the strategy: cgroup when asked for or when `auto` finds a writable cgroup v2 tree. */
export function chooseContainment(choice: ContainmentChoice, cgroupParent: string | null): ContainmentStrategy {
  if (choice === 'process-group') return new ProcessGroupStrategy('process-group containment was requested');
  let parent = cgroupParent;
  let reason: string;
  if (parent === null) {
    const probe = findOwnCgroupDir();
    if (!probe.ok) {
      if (choice === 'cgroup') throw new Error(`cgroup containment was requested but is unavailable: ${probe.reason}`);
      return new ProcessGroupStrategy(`no usable cgroup v2 tree: ${probe.reason}`);
    }
    parent = probe.parent;
    reason = `writable cgroup v2 tree at ${parent}`;
  } else {
    reason = `cgroup v2 tree at ${parent} (configured)`;
  }
  const root = path.join(parent, subtreeName(process.pid));
  try {
    native.cgroupCreate(root);
    if (!fs.existsSync(path.join(root, 'cgroup.kill'))) {
      native.cgroupRemove(root);
      throw new Error('this kernel has no cgroup.kill (needs Linux 5.14 or later)');
    }
  } catch (error) {
    const why = `cannot create ${root}: ${(error as Error).message}`;
    if (choice === 'cgroup') throw new Error(`cgroup containment was requested but is unavailable: ${why}`);
    return new ProcessGroupStrategy(`no usable cgroup v2 tree: ${why}`);
  }
  return new CgroupStrategy(root, reason);
}
