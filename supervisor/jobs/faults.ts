/**
 * Faults a test injects into a supervisor through its environment (HEPH_JOBS_INJECT_FAULT=<step>),
 * to prove that a failure at that step leaves nothing behind. They stand for failures a test
 * cannot cause cleanly (inotify's per-user watch limit, ENOSPC, is shared by every process of the
 * user). The runtime never sets the variable; it is read once, at start.
 */
const INJECTED = process.env.HEPH_JOBS_INJECT_FAULT ?? '';

export type FaultStep = 'job-watch';

/** Throws as the step would fail for real, when a test asked for it. */
export function injectFault(step: FaultStep): void {
  if (INJECTED !== step) return;
  throw Object.assign(new Error(`ENOSPC: System limit for number of file watchers reached (injected by a test at ${step})`), {
    code: 'ENOSPC',
    errno: -28,
    syscall: 'watch',
  });
}
