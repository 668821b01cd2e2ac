/**
 * Test hooks: not part of the package's API (package.json does not export this module). Tests and
 * the benchmarks use them to see and break what a user never should.
 */
import { internalsOf } from './runtime/internals.js';
import type { JobRuntime } from './runtime/job-runtime.js';
import { toolPortOf } from './runtime/tool-port.js';
import type { JobRuntimeOptions } from './runtime/options.js';
import { TEST_SWITCHES } from './runtime/test-switches.js';

/** The pid of the runtime's running supervisor, or null when none runs. */
export function supervisorPid(runtime: JobRuntime): number | null {
  return internalsOf(runtime).supervisorPid();
}

/**
 * The running supervisor's instance (`<pid>-<start>`), or null when none runs. A pid alone is no
 * identity: a new supervisor can get the pid of one that died.
 */
export function supervisorInstance(runtime: JobRuntime): string | null {
  return internalsOf(runtime).supervisorInstance();
}

/** What the running supervisor said about itself when it started. */
export function supervisorHello(runtime: JobRuntime) {
  return internalsOf(runtime).supervisorHello();
}

/** How many requests (calls that wait for a reply) the runtime has sent its supervisors so far. */
export function requestsSent(runtime: JobRuntime): number {
  return internalsOf(runtime).requestsSent();
}

/** Kills the supervisor as a crash would. */
export function killSupervisor(runtime: JobRuntime, signal: NodeJS.Signals = 'SIGKILL'): void {
  internalsOf(runtime).killSupervisor(signal);
}

/** Resolves once every cleanup after a lost supervisor has finished. */
export function settledLostCleanups(runtime: JobRuntime): Promise<void> {
  return internalsOf(runtime).settledLostCleanups();
}

/** Resolves true when `predicate` holds (re-checked on every job change), false after `ms`. */
export function waitFor(runtime: JobRuntime, predicate: () => boolean, ms: number): Promise<boolean> {
  return internalsOf(runtime).waitFor(predicate, ms);
}

/** The supervisor's loaded modules (Node's internal list), to prove child_process never is. */
export function supervisorDiagnostics(runtime: JobRuntime) {
  return internalsOf(runtime).supervisorDiagnostics();
}

/**
 * Runs the runtime's supervisors without the lock vault from the next start on, so that a crash
 * drops their locks (the negative control of the crash-window tests).
 */
export function withoutLockVault(runtime: JobRuntime): void {
  internalsOf(runtime).disableLockVault();
}

/** What the tools ask of the runtime beyond its public calls (held resources, settings, ...). */
export function toolPort(runtime: JobRuntime) {
  return toolPortOf(runtime);
}

/**
 * Has the runtime's next supervisor die (SIGKILL to itself) while it starts: at the start of its
 * hello (`hello`), or once it has adopted the vault's leases (`hello-adopted`). Once only.
 */
export function dieAtNextSupervisorStart(runtime: JobRuntime, step: 'hello' | 'hello-adopted'): void {
  internalsOf(runtime).faultAtNextStart(`die-at-${step}`);
}

/** Has the runtime's next supervisor refuse every `cleanup-lost` request (as an EIO would). Once only. */
export function failCleanupsOfNextSupervisor(runtime: JobRuntime): void {
  internalsOf(runtime).faultAtNextStart('cleanup-lost');
}

/**
 * `options` with switches only tests set: `forceFork` (the fork spawn path instead of clone3) and
 * `spawnOn` (`auto`, `inline` or `threads`: where the supervisor spawns leaders).
 */
export function withTestSwitches<T extends JobRuntimeOptions>(options: T, switches: { forceFork?: boolean; spawnOn?: string; limitsBy?: 'auto' | 'watchdog' }): T {
  return { ...options, [TEST_SWITCHES]: switches };
}
