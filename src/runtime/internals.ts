/**
 * What tests need to reach inside a runtime (its supervisor's pid, a way to kill that supervisor
 * as a crash would, the end of cleanups after such a crash), kept out of the public API: a runtime
 * registers its internals here, and src/testing.ts (which the package does not export) reads them.
 */
import type { HelloReply, Replies } from '../protocol/messages.js';

export interface RuntimeInternals {
  supervisorPid(): number | null;
  supervisorInstance(): string | null;
  supervisorHello(): HelloReply | null;
  killSupervisor(signal: NodeJS.Signals): void;
  settledLostCleanups(): Promise<void>;
  waitFor(predicate: () => boolean, ms: number): Promise<boolean>;
  supervisorDiagnostics(): Promise<Replies['diagnostics']>;
  disableLockVault(): void;
  requestsSent(): number;
  /** HEPH_JOBS_INJECT_FAULT for the next supervisor started (supervisor/jobs/faults.ts). */
  faultAtNextStart(fault: string): void;
}

const registry = new WeakMap<object, RuntimeInternals>();

export function registerInternals(runtime: object, internals: RuntimeInternals): void {
  registry.set(runtime, internals);
}

export function internalsOf(runtime: object): RuntimeInternals {
  const found = registry.get(runtime);
  if (!found) throw new TypeError('not a JobRuntime of this copy of heph-jobs');
  return found;
}
