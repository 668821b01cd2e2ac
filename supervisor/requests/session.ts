/**
 * Requests about the supervisor itself: hello (sets up containment and locks), ping,
 * diagnostics, shutdown, and cleanup-lost (stop what a dead supervisor left behind).
 */
import { configureLimits, limitMechanisms } from '../limits/context.js';
import { watchAllJobsMemory } from '../limits/all-jobs.js';
import { spawnsOnThreads } from '../jobs/leader-spawn.js';
import { dieIfInjected, injectFault } from '../jobs/faults.js';
import { ProtocolError } from '../../src/protocol/errors.js';
import { cgroupParentOf, chooseContainment } from '../containment/index.js';
import { KernelLocks } from '../locks/kernel-locks.js';
import { openLockDirectory } from '../locks/lock-dir.js';
import { LockVault } from '../locks/vault.js';
import { checkLostPaths, cleanupLostSupervisor } from '../cleanup/lost-cleanup.js';
import { sweepDeadInstances } from '../cleanup/start-sweep.js';
import { codeCacheState } from '../code-cache.js';
import { ownIdentity } from '../identity.js';
import { native } from '../native.js';
import { guardStderrStream, warn } from '../warn.js';
import type { HelloReply, VaultMode } from '../../src/protocol/messages.js';
import type { Handlers, RequestContext } from './context.js';

/** The lock vault as hello asks for it; a vault that cannot be set up is reported, not fatal. */
function openVault(mode: VaultMode): { vault: LockVault | null; state: HelloReply['vault']['state'] } {
  try {
    if (mode === 'create') return { vault: LockVault.create(), state: 'created' };
    if (mode === 'inherit') {
      const vault = LockVault.inherit();
      return { vault, state: vault ? 'inherited' : 'missing' };
    }
  } catch (error) {
    warn(`no lock vault: ${(error as Error).message}`);
  }
  return { vault: null, state: 'none' };
}

export function sessionHandlers(context: RequestContext): Handlers<'hello' | 'ping' | 'limit-mechanisms' | 'diagnostics' | 'shutdown' | 'cleanup-lost'> {
  const { state } = context;
  return {
    hello: ({ config, vault: vaultMode }) => {
      if (state.setup) throw new ProtocolError('hello was already received');
      dieIfInjected('hello');
      const cgroupParent = cgroupParentOf(config.cgroupParent);
      const strategy = chooseContainment(config.containment, cgroupParent);
      const scope = { cgroupParent: cgroupParent.parent };
      const lockDir = openLockDirectory(config.lockDir);
      const vault = openVault(vaultMode ?? 'none');
      const locks = new KernelLocks(lockDir, scope, vault.vault);
      // A dead supervisor's leases, kept in the vault: ours now, before anyone else can ask.
      const adopted = locks.adopt();
      dieIfInjected('hello-adopted');
      state.start({ config, strategy, scope, locks });
      configureLimits({ watchdogOnly: config.testing?.limitsBy === 'watchdog', cgroupRoot: strategy.info.cgroupRoot });
      if (config.allJobsMemoryBytes !== undefined) watchAllJobsMemory(config.allJobsMemoryBytes, () => state.jobs.values());
      // From now on the runtime's death kills every job from the signal handler, at once.
      if (strategy.everyJobKillFd !== null) native.killOnParentDeath(strategy.everyJobKillFd);
      // What dead instances left (a runtime killed together with its supervisor). The search reads
      // every process's environment (tens of ms in a fresh process on a busy machine), so it starts
      // just after this answer and works in slices: the runtime's first calls do not wait for it.
      setImmediate(() => {
        guardStderrStream();
        sweepDeadInstances(scope).catch((error: unknown) => {
          warn(`the sweep of dead supervisors' leftovers failed: ${(error as Error).message}`);
        });
      });
      return { pid: process.pid, instance: ownIdentity(), containment: strategy.info, subreaper: native.isChildSubreaper(), locks: lockDir.info, vault: { state: vault.state, adopted } };
    },
    ping: () => ({ pid: process.pid }),
    'limit-mechanisms': () => limitMechanisms(),
    // Node's internal list of loaded modules and bindings: tests prove child_process never is.
    diagnostics: () => ({
      moduleLoadList: (process as unknown as { moduleLoadList?: string[] }).moduleLoadList ?? [],
      codeCache: codeCacheState(),
      spawnsOnThreads: spawnsOnThreads(),
    }),
    shutdown: () => {
      context.shutdown();
      return null;
    },
    'cleanup-lost': async ({ supervisor, jobs }) => {
      const { scope } = state.started();
      injectFault('cleanup-lost');
      checkLostPaths(supervisor, scope, jobs);
      await cleanupLostSupervisor(supervisor, scope, jobs);
      return null;
    },
  };
}
