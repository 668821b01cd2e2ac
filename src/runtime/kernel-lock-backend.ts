/**
 * The lock table's backend: every grant is also taken as kernel OFD locks by the supervisor
 * (supervisor/locks/kernel-locks.ts), so two runtimes on one machine exclude each other. The
 * supervisor keeps its locked descriptors in the lock vault (supervisor/locks/vault.ts), whose
 * carrier this runtime holds: a grant outlives a supervisor's crash and is released by the kernel
 * only when this runtime releases it or is itself gone.
 */
import type { LockBackend, LockOwner, NormalizedResource } from '../locks/index.js';
import type { RequestBody } from '../protocol/messages.js';
import type { SupervisorClient } from './supervisor-client.js';

interface HeldLease {
  resources: readonly NormalizedResource[];
  owner: LockOwner;
  supervisor: SupervisorClient;
}

/** What became of the leases lost supervisors held (see `takeOver`). */
export interface RetakeOutcome {
  /** Resources whose kernel locks were not kept through the crash: another runtime could take them meanwhile. */
  open: string[];
  /** Of those, the host's resources a fresh supervisor could not take again (another holder has them). */
  contended: string[];
}

export interface KernelLockBackend extends LockBackend {
  /**
   * Called for every supervisor that comes up, before anything else is asked of it: the leases
   * lost supervisors held move to it. Those the vault kept it adopted (their kernel locks never
   * went); one the vault did not keep is reported open, and the host's own such leases are taken
   * again in it (a job's stays with its lost job, released once what is left of it is stopped).
   * Adopted leases this runtime no longer holds (released while no supervisor ran) are released.
   */
  takeOver(supervisor: SupervisorClient): Promise<RetakeOutcome>;
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
    takeOver(supervisor) {
      const outcome: RetakeOutcome = { open: [], contended: [] };
      // Synchronous up to the retakes: the unlocks leave before any call's request to it.
      const adopted = new Set(supervisor.hello?.vault.adopted ?? []);
      for (const lease of adopted) {
        if (!held.has(lease)) void supervisor.request('unlock', { lease }).catch(() => undefined);
      }
      const retaking: Promise<void>[] = [];
      for (const [lease, entry] of held) {
        if (entry.supervisor === supervisor || !entry.supervisor.isLost) continue;
        entry.supervisor = supervisor;
        if (adopted.has(lease)) continue;
        outcome.open.push(...entry.resources.map((res) => res.resource));
        if (typeof entry.owner.jobId === 'number') continue;
        retaking.push(
          (async () => {
            const taken = supervisor.request('lock', lockRequest(lease, entry.resources, entry.owner));
            const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), RETAKE_WAIT_MS).unref());
            if ((await Promise.race([taken.then(() => 'ok' as const, () => 'error' as const), timer])) !== 'ok') {
              outcome.contended.push(...entry.resources.map((res) => res.resource));
            }
          })(),
        );
      }
      return Promise.all(retaking).then(() => outcome);
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
          // The lease may have moved to a fresh supervisor since (takeOver). With none running, the
          // vault still holds it: the next one to come up releases it, so one is started now.
          if (!entry.supervisor.isLost) void entry.supervisor.request('unlock', { lease }).catch(() => undefined);
          else void supervisorFor().catch(() => undefined);
        },
      };
    },
  };
}
