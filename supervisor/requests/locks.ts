/** Requests about resource locks: lock (an all-or-nothing set of OFD locks) and unlock. */
import type { Handlers, RequestContext } from './context.js';

export function lockHandlers(context: RequestContext): Handlers<'lock' | 'unlock'> {
  const { state } = context;
  return {
    lock: async ({ lease, resources, owner }) => {
      const { locks } = state.started();
      // The holder record names this instance (pid, start time, boot); a later taker that finds it
      // dead stops what is left of its jobs through that identity.
      await locks.acquire(lease, resources, { label: owner.label, job: owner.job });
      return null;
    },
    unlock: ({ lease }) => {
      state.started().locks.release(lease);
      return null;
    },
  };
}
