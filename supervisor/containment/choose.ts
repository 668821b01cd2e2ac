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

/**
 * The cgroup directory our subtree is (or would be) made in: the configured one, else our own
 * cgroup's directory, or its nearest ancestor delegated to us (platform/cgroup.ts says what we
 * may use and why; the reason becomes capabilities().containment.reason). Also where a dead instance's subtree is looked for: supervisors of one
 * runtime, and of runtimes started the same way, share it.
 */
export type CgroupParent = { parent: string; reason: string } | { parent: null; reason: string };

export function cgroupParentOf(configured: string | null): CgroupParent {
  if (configured !== null) return { parent: configured, reason: `cgroup v2 tree at ${configured} (configured)` };
  const probe = findOwnCgroupDir();
  return probe.ok ? { parent: probe.parent, reason: probe.reason } : { parent: null, reason: probe.reason };
}

/**
 * Picks the strategy: cgroup when asked for or when `auto` finds a writable cgroup v2 tree
 * (`found`: cgroupParentOf, which hello also needs for its scope: one probe of /proc, not two).
 */
export function chooseContainment(choice: ContainmentChoice, found: CgroupParent): ContainmentStrategy {
  if (choice === 'process-group') return new ProcessGroupStrategy('process-group containment was requested');
  const { parent, reason } = found;
  if (parent === null) {
    if (choice === 'cgroup') throw new Error(`cgroup containment was requested but is unavailable: ${reason}`);
    return new ProcessGroupStrategy(`no usable cgroup v2 tree: ${reason}`);
  }
  const root = path.join(parent, subtreeName());
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
