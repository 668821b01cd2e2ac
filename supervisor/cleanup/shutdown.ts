/**
 * The end of a supervisor: every job stopped at once (no grace: the runtime is gone or asked),
 * everything below us killed and reaped, our cgroups removed, then exit.
 */
import { freezeThenKill } from '../containment/signal.js';
import { native } from '../native.js';
import { livesOn } from '../containment/stragglers.js';
import { descendantsOf, listProcesses } from '../platform/procfs.js';
import type { SupervisorState } from '../state.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** Longest the final sweep waits for what it killed to be gone. */
const FINAL_SWEEP_MS = 5000;
/** Pause between sweeps: what was killed needs a moment to be reaped by our reaper thread. */
const SWEEP_PAUSE_MS = 2;

/**
 * At the end of the session everything below the supervisor is ours, whatever job it came from:
 * a process that escaped attribution (left its session and cleared its environment) is still our
 * descendant, reparented to us as the subreaper. Kill them all, and let the reaper reap them.
 */
async function killEverythingBelowUs(): Promise<void> {
  const deadline = Date.now() + FINAL_SWEEP_MS;
  const below = () => {
    const table = listProcesses();
    const found = descendantsOf([process.pid], table);
    return table.filter((entry) => found.has(entry.pid) && entry.pid !== process.pid && livesOn(entry));
  };
  // Frozen first, then killed, each through a pidfd checked against what the scan saw.
  while (freezeThenKill(below) > 0 && Date.now() <= deadline) await sleep(SWEEP_PAUSE_MS);
}

/**
 * Ends the process with `code` once its 'exit' listeners have run (the code cache's warm-up is
 * one), through _exit: Node's own exit can hang for good in its platform teardown
 * (nodejs/node#54918, seen here on Node 26), and a supervisor must never outlive its runtime.
 */
export function exitNow(code: number): never {
  process.exitCode = code;
  process.emit('exit', code);
  return native.exitNow(code);
}

/** Stops everything and exits; `close` closes the channel last. Later calls join the first. */
export function shutdown(state: SupervisorState, close: () => void): Promise<void> {
  state.shuttingDown ??= (async () => {
    const jobs = [...state.jobs.values()];
    // Every job's kill before any job's cleanup: the last process dies as soon as it can. In one
    // step where the strategy can (then each job is only marked as killed), else job by job.
    const allKilled = state.setup?.strategy.killEveryJob() ?? false;
    for (const job of jobs) job.killNow(allKilled);
    await Promise.all(jobs.map((job) => job.destroy()));
    await killEverythingBelowUs();
    state.setup?.strategy.dispose();
    state.setup?.locks.close();
    close();
    exitNow(0);
  })();
  return state.shuttingDown;
}
