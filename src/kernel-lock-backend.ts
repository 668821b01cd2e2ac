/**
 * The lock table's backend: every grant is also taken as kernel OFD locks by the supervisor
 * (supervisor/kernel-locks.ts), so two runtimes on one machine exclude each other, and a grant is
 * released by the kernel only when the supervisor that holds it is gone.
 */
import type { LockBackend } from './locks/index.js';
import type { SupervisorClient } from './supervisor-client.js';

export function kernelLockBackend(supervisorFor: () => Promise<SupervisorClient>): LockBackend {
  let nextLease = 1;
  return {
    acquire: async (resources, owner, signal) => {
      const supervisor = await supervisorFor();
      const lease = nextLease++;
      // A cancelled wait is withdrawn in the supervisor too (it polls until the locks are free).
      const onAbort = () => void supervisor.request({ type: 'unlock', lease }).catch(() => undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        await supervisor.request({
          type: 'lock',
          lease,
          resources: resources.map(({ resource, kind, value, mode }) => ({ resource, kind, value, mode })),
          owner: { label: owner.label, job: typeof owner.jobId === 'number' ? owner.jobId : null },
        });
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
      return {
        release: () => {
          if (!supervisor.isLost) void supervisor.request({ type: 'unlock', lease }).catch(() => undefined);
        },
      };
    },
  };
}
