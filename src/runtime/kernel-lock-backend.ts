/**
 * The lock table's backend: every grant is also taken as kernel OFD locks by the supervisor
 * (supervisor/locks/kernel-locks.ts), so two runtimes on one machine exclude each other, and a grant is
 * released by the kernel only when the supervisor that holds it is gone.
 */
import type { LockBackend, LockOwner, NormalizedResource } from '../locks/index.js';
import type { RequestBody } from '../protocol/messages.js';
import type { SupervisorClient } from './supervisor-client.js';

interface HeldLease {
  resources: readonly NormalizedResource[];
  owner: LockOwner;
  supervisor: SupervisorClient;
}

export interface KernelLockBackend extends LockBackend {
  /**
   * After a supervisor died (the kernel dropped its locks), takes the host's own leases again in
   * the fresh one, so other runtimes are excluded again. Jobs' leases are not taken again: their
   * jobs are lost and the leases are released once what is left of them is stopped. Resolves
   * with the resources that another holder took in between (the host holds them only locally).
   */
  retake(lost: SupervisorClient): Promise<string[]>;
}

function lockRequest(lease: number, resources: readonly NormalizedResource[], owner: LockOwner): RequestBody<'lock'> {
  return {
    lease,
    resources: resources.map(({ resource, kind, value, mode }) => ({ resource, kind, value, mode })),
    owner: { label: owner.label, job: typeof owner.jobId === 'number' ? owner.jobId : null },
  };
}

/** How long a host lease is waited for in a fresh supervisor before it is reported as contended. */
const RETAKE_WAIT_MS = 2000;

export function kernelLockBackend(supervisorFor: () => Promise<SupervisorClient>): KernelLockBackend {
  let nextLease = 1;
  const held = new Map<number, HeldLease>();
  return {
    async retake(lost) {
      const contended: string[] = [];
      const hostLeases = [...held].filter(([, lease]) => lease.supervisor === lost && typeof lease.owner.jobId !== 'number');
      if (hostLeases.length === 0) return contended;
      const supervisor = await supervisorFor();
      await Promise.all(
        hostLeases.map(async ([lease, entry]) => {
          entry.supervisor = supervisor;
          const taken = supervisor.request('lock', lockRequest(lease, entry.resources, entry.owner));
          const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), RETAKE_WAIT_MS).unref());
          if ((await Promise.race([taken.then(() => 'ok' as const, () => 'error' as const), timer])) !== 'ok') {
            contended.push(...entry.resources.map((res) => res.resource));
          }
        }),
      );
      return contended;
    },
    acquire: async (resources, owner, signal) => {
      const supervisor = await supervisorFor();
      const lease = nextLease++;
      // A cancelled wait is withdrawn in the supervisor too (it polls until the locks are free).
      const onAbort = () => void supervisor.request('unlock', { lease }).catch(() => undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        await supervisor.request('lock', lockRequest(lease, resources, owner));
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
      const entry: HeldLease = { resources, owner, supervisor };
      held.set(lease, entry);
      return {
        release: () => {
          held.delete(lease);
          // The lease may have moved to a fresh supervisor since (retake).
          if (!entry.supervisor.isLost) void entry.supervisor.request('unlock', { lease }).catch(() => undefined);
        },
      };
    },
  };
}
