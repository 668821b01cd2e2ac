/**
 * Issue 28, item 7: what the lock vault can keep. A lease of the most resources one may take is granted and
 * outlives its supervisor's crash (it used to fail: its notes were repeated in every message, past
 * the 64 KiB a message may carry); a lease whose notes are more than the vault's socket can queue
 * is refused at grant time, and holds nothing, instead of being granted unprotected. Kernel truth:
 * an OFD lock attempt on the same lock files through another open file description.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { attackerForSuite, attackerUnavailable } from '../helpers/attacker.js';
import { locksOn } from '../helpers/lock-dirs.js';
import { waitUntil } from '../helpers/kernel.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';
import { normalizeResources } from '../../src/locks/index.js';
import { maxLeaseFiles, type KernelLocks } from '../../supervisor/locks/kernel-locks.js';
import { killSupervisor, settledLostCleanups, supervisorInstance, waitFor } from '../../src/testing.js';

const OWNER = { label: 'probe', job: null };
let probes = 0;

/** Whether another holder (`probe`: its own descriptions) could take `resource` now; it lets go at once. */
function free(probe: KernelLocks, resource: string): boolean {
  const lease = ++probes;
  const got = probe.tryAcquire(lease, normalizeResources([{ resource, mode: 'exclusive' }]), OWNER);
  probe.release(lease);
  return got;
}

describe('the lock vault\'s capacity (issue 28, item 7)', () => {
  it('one lease of as many resources as a lease may take is granted and kept through a crash of the supervisor', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const runtime = await startRuntime('process-group', { lockDir });
    const probe = locksOn(lockDir);
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => warnings.push(`${warning.code}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      // The most lock files one lease may take (item 6), with names long enough that the lease's
      // notes are past the 64 KiB one vault message may carry.
      const count = maxLeaseFiles();
      const resources = Array.from({ length: count }, (_, i) => `worktree:big-${'n'.repeat(160)}-${i}`);
      const last = resources.at(-1)!;
      const lease = await runtime.locks.acquire({ label: 'host' }, resources);
      expect(free(probe, last)).toBe(false);
      const crashed = supervisorInstance(runtime);
      killSupervisor(runtime, 'SIGKILL');
      expect(await waitFor(runtime, () => supervisorInstance(runtime) === null || supervisorInstance(runtime) !== crashed, 10_000)).toBe(true);
      await runtime.capabilities(); // a fresh supervisor, which adopted the lease
      await settledLostCleanups(runtime);
      expect([free(probe, resources[0]!), free(probe, last)]).toEqual([false, false]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((text) => text.startsWith('HEPH_JOBS_LOCK_BREACH'))).toEqual([]);
      // Negative control of the probe: released, the resources are free.
      lease.release();
      await waitUntil(() => free(probe, last), 'the released lease to be free');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a lease the vault has no room for is refused at grant time, and holds nothing', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const runtime = await startRuntime('process-group', { lockDir });
    const probe = locksOn(lockDir);
    const small = await runtime.locks.acquire({ label: 'host' }, ['worktree:small']);
    // Resources whose names alone are twice what one of the vault's sockets can queue.
    const buffer = Number(fs.readFileSync('/proc/sys/net/core/wmem_default', 'latin1'));
    const name = 'r'.repeat(900);
    const resources = Array.from({ length: Math.ceil((2 * buffer) / name.length) }, (_, i) => `worktree:${name}-${i}`);
    const refused = await runtime.locks.acquire({ label: 'host' }, resources).then(
      () => null,
      (error: Error & { code?: string }) => error,
    );
    expect(refused?.code).toBe('ERR_LOCK_VAULT_FULL');
    expect(refused?.message).toMatch(/lock vault has no room to keep this lease of \d+ resources .* so it is refused/);
    expect(resources.filter((resource, i) => i % 50 === 0 && !free(probe, resource))).toEqual([]);
    // The lease granted before it is still kept, and the table holds nothing of the refused one.
    expect(free(probe, 'worktree:small')).toBe(false);
    const again = await runtime.locks.acquire({ label: 'host' }, [resources[0]!]);
    again.release();
    small.release();
  });
});

/**
 * Without CAP_SYS_RESOURCE a user may have at most RLIMIT_NOFILE descriptors in flight, and a
 * store has the old and the new snapshot in flight at once: past that the kernel says ETOOMANYREFS,
 * and draining a snapshot near the limit gets MSG_CTRUNC. The supervisor's own table, with room kept
 * for the vault's next store (item 5), may refuse it first (EMFILE): either way the lease is refused
 * at grant time, the one before it still held. As an unprivileged user, `ulimit -n 400` (so a lease
 * may take 100 lock files, item 6).
 */
describe.skipIf(attackerUnavailable !== null)('the lock vault at a low descriptor limit (issue 28, item 7)', () => {
  const suite = attackerForSuite('vault-limit');

  it('refuses the lease that would pass RLIMIT_NOFILE in flight, and keeps the one before it', () => {
    const out = suite.user().run(`ulimit -n 400 && ${process.execPath} ${path.join(FIXTURES, 'vault-limit-host.mjs')} ${path.join(suite.home(), 'locks')} 100`);
    const result = JSON.parse(out.trim().split('\n').pop()!) as { second: { code: string; message: string } };
    expect(result).toMatchObject({ first: 'granted', firstHeld: true, refusedFree: true });
    expect(['ERR_LOCK_VAULT_FULL', 'EMFILE']).toContain(result.second.code);
    expect(result.second.message).toMatch(/RLIMIT_NOFILE|descriptor/);
  });
});
