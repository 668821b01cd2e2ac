/**
 * Faults a test injects into a supervisor through its environment (HEPH_JOBS_INJECT_FAULT=<step>),
 * to prove that a failure at that step leaves nothing behind. They stand for failures a test
 * cannot cause cleanly (inotify's per-user watch limit, ENOSPC, is shared by every process of the
 * user). The runtime never sets the variable; it is read once, at start.
 */
import { constants } from 'node:os';
import { native } from '../native.js';

const INJECTED = process.env.HEPH_JOBS_INJECT_FAULT ?? '';
const SIGKILL = constants.signals.SIGKILL;

/** Each step with the failure it stands for. */
const FAULTS = {
  'job-watch': { code: 'ENOSPC', errno: -28, syscall: 'watch', text: 'System limit for number of file watchers reached' },
  'job-output': { code: 'ENOMEM', errno: -12, syscall: 'uv_pipe_open', text: 'not enough memory' },
  'cleanup-lost': { code: 'EIO', errno: -5, syscall: 'cgroup.kill', text: 'input/output error' },
} as const;

export type FaultStep = keyof typeof FAULTS;

/** Throws as the step would fail for real, when a test asked for it. */
export function injectFault(step: FaultStep): void {
  if (INJECTED !== step) return;
  const { code, errno, syscall, text } = FAULTS[step];
  throw Object.assign(new Error(`${code}: ${text} (injected by a test at ${step})`), { code, errno, syscall });
}

/** Steps at which a test has the supervisor die as a crash would (SIGKILL to itself). */
export type DeathStep = 'hello' | 'hello-adopted';

/** Dies at `step` when a test asked for it: a supervisor killed while it starts. */
export function dieIfInjected(step: DeathStep): void {
  // Through a pidfd, as every signal of the supervisor goes (test/unit/pidfd-signals.test.ts).
  if (INJECTED === `die-at-${step}`) native.pidfdSendSignal(native.pidfdOpen(process.pid), SIGKILL);
}
