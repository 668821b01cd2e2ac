/** Running a test host in a pid namespace of its own, with a cgroup parent of the test's own. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { writableCgroupParent } from './modes.js';
import { BOUNDED } from './bounded.js';

/**
 * `unshare` arguments that run a command as the init of a new pid namespace with its own /proc,
 * under a shell that reaps what is reparented to it. Should the command hang, a SIGTERM to unshare
 * SIGKILLs that shell (--kill-child), and with a namespace's init the kernel kills every process
 * in it.
 */
export function inPidNamespace(command: string, args: string[]): string[] {
  return ['--pid', '--fork', '--mount-proc', '--kill-child', 'sh', '-c', '"$0" "$@"; exit $?', command, ...args];
}

/** Why a pid namespace cannot be made here (null: it can), checked by running `script` in one. */
export function pidNamespaceProblem(script = 'true'): string | null {
  const probe = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'sh', '-c', script], BOUNDED);
  return probe.status === 0 ? null : `cannot make a pid namespace (unshare --pid --fork --mount-proc): ${probe.stderr?.toString().trim() || probe.error?.message}`;
}

/** A new empty cgroup under the writable parent, named after `label` (null: no cgroup is writable). */
export function privateCgroupParent(label: string): string | null {
  const writable = writableCgroupParent();
  if (!('parent' in writable)) return null;
  const dir = path.join(writable.parent, `heph-test-${label}-${process.pid}-${Date.now()}`);
  fs.mkdirSync(dir);
  return dir;
}
