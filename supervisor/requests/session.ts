/**
 * Requests about the supervisor itself: hello (sets up containment and locks), ping,
 * diagnostics, shutdown, and cleanup-lost (stop what a dead supervisor left behind).
 */
import { ProtocolError } from '../../src/protocol/errors.js';
import { cgroupParentOf, chooseContainment } from '../containment/index.js';
import { KernelLocks } from '../locks/kernel-locks.js';
import { openLockDirectory } from '../locks/lock-dir.js';
import { checkLostPaths, cleanupLostSupervisor } from '../cleanup/lost-cleanup.js';
import { sweepDeadInstances } from '../cleanup/start-sweep.js';
import { ownIdentity } from '../identity.js';
import { native } from '../native.js';
import type { Handlers, RequestContext } from './context.js';

export function sessionHandlers(context: RequestContext): Handlers<'hello' | 'ping' | 'diagnostics' | 'shutdown' | 'cleanup-lost'> {
  const { state } = context;
  return {
    hello: ({ config }) => {
      if (state.setup) throw new ProtocolError('hello was already received');
      const strategy = chooseContainment(config.containment, config.cgroupParent);
      const scope = { cgroupParent: cgroupParentOf(config.cgroupParent).parent };
      const lockDir = openLockDirectory(config.lockDir);
      state.start({ config, strategy, scope, locks: new KernelLocks(lockDir, scope) });
      // What dead instances left (a runtime killed together with its supervisor): the first
      // round of kills is sent before we answer; the rest (reaps, cgroup removal) goes on after.
      sweepDeadInstances(scope).catch((error: unknown) => {
        process.stderr.write(`heph-jobs supervisor: the sweep of dead supervisors' leftovers failed: ${(error as Error).message}\n`);
      });
      return { pid: process.pid, instance: ownIdentity(), containment: strategy.info, subreaper: native.isChildSubreaper(), locks: lockDir.info };
    },
    ping: () => ({ pid: process.pid }),
    // Node's internal list of loaded modules and bindings: tests prove child_process never is.
    diagnostics: () => ({ moduleLoadList: (process as unknown as { moduleLoadList?: string[] }).moduleLoadList ?? [] }),
    shutdown: () => {
      context.shutdown();
      return null;
    },
    'cleanup-lost': async ({ supervisor, jobs }) => {
      const { scope } = state.started();
      checkLostPaths(supervisor, scope, jobs);
      await cleanupLostSupervisor(supervisor, scope, { jobs, pipes: [] });
      return null;
    },
  };
}
