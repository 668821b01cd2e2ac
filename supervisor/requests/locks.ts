/** Requests about resource locks: lock (an all-or-nothing set of OFD locks) and unlock. */
import { ownIdentity } from '../identity.js';
import type { Handlers, RequestContext } from './context.js';

export function lockHandlers(context: RequestContext): Handlers<'lock' | 'unlock'> {
  const { state } = context;
  return {
    lock: async ({ lease, resources, owner }) => {
      const { locks, strategy } = state.started();
      const job = owner.job === null ? undefined : state.jobs.get(owner.job);
      // What a later supervisor needs to stop this holder's processes should it die holding them.
      // The holder is this instance (pid, start time, boot): a recycled pid is not the holder.
      await locks.acquire(lease, resources, {
        ...ownIdentity(),
        owner: owner.label,
        job: owner.job,
        cgroup: job?.identity.cgroup ?? strategy.info.cgroupRoot,
      });
      return null;
    },
    unlock: ({ lease }) => {
      state.started().locks.release(lease);
      return null;
    },
  };
}
