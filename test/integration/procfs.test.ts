/**
 * The /proc readers the supervisor's sweeps rely on: a process's children are found on every
 * kernel (the per-thread children files exist only with CONFIG_PROC_CHILDREN; without them the
 * stragglers sweep, the zombie check and the tests that use them would silently find nothing).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { childrenByPpid, childrenFromTaskFiles, childrenOf, readProcStat } from '../../supervisor/platform/procfs.js';
import { isRunning, waitUntil } from '../helpers/kernel.js';

const started: ChildProcess[] = [];

afterEach(async () => {
  await Promise.all(
    started.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }),
  );
});

/** A `sleep` whose own child (`true`) has exited and is never waited for: a zombie grandchild of ours. */
async function parentOfZombie(): Promise<{ parent: number; zombie: number }> {
  const child = spawn('/bin/sh', ['-c', 'true & exec sleep 60'], { stdio: 'ignore' });
  started.push(child);
  const parent = child.pid!;
  let zombie = 0;
  await waitUntil(() => {
    zombie = childrenByPpid(parent).find((pid) => readProcStat(pid)?.state === 'Z') ?? 0;
    return zombie !== 0 && isRunning(parent);
  }, 'the sleep and its zombie child');
  return { parent, zombie };
}

describe('children of a process', () => {
  it('finds a child, and a zombie child, by ppid, and not a grandchild or a stranger', async () => {
    const { parent, zombie } = await parentOfZombie();
    expect(childrenByPpid(process.pid)).toContain(parent);
    // Negative controls: the grandchild is not our child, and pid 1 is nobody's here.
    expect(childrenByPpid(process.pid)).not.toContain(zombie);
    expect(childrenByPpid(parent)).toEqual([zombie]);
    expect(childrenByPpid(1)).not.toContain(parent);
  });

  it('childrenOf finds them on this kernel, whichever source it has', async () => {
    const { parent, zombie } = await parentOfZombie();
    expect(childrenOf(process.pid)).toContain(parent);
    expect(childrenOf(parent)).toEqual([zombie]);
    const files = childrenFromTaskFiles(parent);
    console.log(`[procfs] per-thread children files: ${files === null ? 'absent (CONFIG_PROC_CHILDREN off): the /proc scan is used' : 'present'}`);
    if (files !== null) expect(files).toEqual([zombie]);
  });
});
