/**
 * The sweep when a supervisor starts (issue 12, item 9): a runtime and its supervisor killed
 * together (an OOM kill takes both) leave their jobs running and their cgroups behind, and no one
 * is left to send `cleanup-lost`. So each new supervisor looks for dead instances' leftovers, the
 * `heph-jobs-<pid>-<start>-pidns<inode>` subtrees of our pid namespace under our cgroup parent, the
 * `<subtree name>-job<N>` v1 limit groups beside our own (limit-groups.ts), and the processes of our
 * uid and namespace whose marker names an instance, and has lost-cleanup.ts
 * stop each dead one's (a live instance's names are never acted on: its pid still has that start
 * time; another namespace's are never judged: its pids mean other processes here).
 */
import fs from 'node:fs';
import { setImmediate } from 'node:timers/promises';
import { instanceName, type SupervisorIdentity } from '../../src/protocol/identity.js';
import { bootId, instanceAlive } from '../identity.js';
import { MARKER_KEY, ownNamespaceSubtreeInstance, parseMarker } from '../names.js';
import { environEntries, listProcesses } from '../platform/procfs.js';
import { environThread } from '../containment/stragglers.js';
import { limitGroups } from './limit-groups.js';
import { cleanupLostSupervisor, judgeable, type CleanupScope } from './lost-cleanup.js';

/** Work on the process table after which the sweep lets the event loop run (requests, output). */
const SWEEP_SLICE_MS = 2;
/** Processes judged between two looks at the clock. */
const SWEEP_CHUNK = 16;

/**
 * Instances with something left that we can see, which are dead (this boot: /proc and cgroupfs
 * hold nothing older). Reading every process's environment is the costly part (a few ms per
 * hundred processes when warm, tens of ms in a fresh supervisor on a busy machine), and it runs
 * while the runtime's first calls arrive: so it works in slices, with the event loop between.
 */
export async function deadInstances(scope: CleanupScope): Promise<SupervisorIdentity[]> {
  const boot = bootId();
  const dead = new Map<string, SupervisorIdentity>();
  const consider = (instance: { pid: number; start: string }) => {
    const identity = { ...instance, boot };
    const name = instanceName(identity);
    if (!dead.has(name) && !instanceAlive(identity)) dead.set(name, identity);
  };
  if (scope.cgroupParent !== null) {
    let entries: fs.Dirent[] = [];
    try {
      entries = fs.readdirSync(scope.cgroupParent, { withFileTypes: true });
    } catch {
      // No parent (any more): nothing of ours below it.
    }
    for (const entry of entries) {
      const instance = entry.isDirectory() ? ownNamespaceSubtreeInstance(entry.name) : null;
      if (instance !== null) consider(instance);
    }
  }
  // A dead instance may have left nothing else: its jobs ended, in process-group mode.
  for (const group of limitGroups()) consider(group.instance);
  const table = listProcesses();
  let slice = Date.now();
  for (let at = 0; at < table.length; at += SWEEP_CHUNK) {
    for (const entry of judgeable(table, table.slice(at, at + SWEEP_CHUNK))) {
      for (const marker of environEntries(entry.pid, MARKER_KEY, environThread(entry))) {
        const parsed = parseMarker(marker);
        if (parsed !== null) consider(parsed.instance);
      }
    }
    if (Date.now() - slice >= SWEEP_SLICE_MS) {
      await setImmediate();
      slice = Date.now();
    }
  }
  return [...dead.values()];
}

/**
 * Stops what every dead instance left. Each one's first round of kills is sent as soon as the
 * search has found it dead (cleanupLostSupervisor signals before its first await); the promise
 * settles once all is gone and the subtrees and empty limit groups are removed (or a deadline passed).
 */
export async function sweepDeadInstances(scope: CleanupScope): Promise<unknown> {
  return Promise.all((await deadInstances(scope)).map((dead) => cleanupLostSupervisor(dead, scope)));
}
