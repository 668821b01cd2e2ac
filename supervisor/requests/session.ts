/**
 * Requests about the supervisor itself: hello (sets up containment and locks), ping,
 * diagnostics, shutdown, and cleanup-lost (stop what a dead supervisor left behind).
 */
import { ProtocolError } from '../../src/protocol/errors.js';
import { chooseContainment } from '../containment/index.js';
import { KernelLocks } from '../locks/kernel-locks.js';
import { openLockDirectory } from '../locks/lock-dir.js';
import { checkLostPaths, cleanupLostSupervisor } from '../cleanup/lost-cleanup.js';
import { native } from '../native.js';
import type { Handlers, RequestContext } from './context.js';

export function sessionHandlers(context: RequestContext): Handlers<'hello' | 'ping' | 'diagnostics' | 'shutdown' | 'cleanup-lost'> {
  const { state } = context;
  return {
    hello: ({ config }) => {
      if (state.setup) throw new ProtocolError('hello was already received');
      const strategy = chooseContainment(config.containment, config.cgroupParent);
      const lockDir = openLockDirectory(config.lockDir);
      state.start({ config, strategy, locks: new KernelLocks(lockDir) });
      return { pid: process.pid, containment: strategy.info, subreaper: native.isChildSubreaper(), locks: lockDir.info };
    },
    ping: () => ({ pid: process.pid }),
    // Node's internal list of loaded modules and bindings: tests prove child_process never is.
    diagnostics: () => ({ moduleLoadList: (process as unknown as { moduleLoadList?: string[] }).moduleLoadList ?? [] }),
    shutdown: () => {
      context.shutdown();
      return null;
    },
    'cleanup-lost': async ({ supervisor, jobs }) => {
      state.started();
      checkLostPaths(supervisor.pid, supervisor.cgroupRoot, jobs);
      await cleanupLostSupervisor(supervisor.pid, supervisor.cgroupRoot, jobs);
      return null;
    },
  };
}
