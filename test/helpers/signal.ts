/**
 * Signals for test cleanups that hold only a pid of a process they did not spawn themselves (the
 * heph-jobs a pty relay started, an MCP server the SDK started). A pid alone may name a stranger
 * by the time a cleanup runs: this suite forks tens of thousands of processes and pids wrap.
 * So a process is signalled through a pidfd, and only when the start time seen while it was
 * surely ours is still the one of the process the pidfd names.
 */
import os from 'node:os';
import { native } from '../../supervisor/native.js';
import { startTime, type SeenProcess } from './kernel.js';

/** Sends `signal` to `proc` if its pid still names it; false when it is gone (or the pid is another's now). */
export function signalIfSame(proc: SeenProcess, signal: NodeJS.Signals): boolean {
  let pidfd: number;
  try {
    pidfd = native.pidfdOpen(proc.pid);
  } catch {
    return false; // no such process
  }
  try {
    // The pidfd pins the process it was opened on: if that one has the start time we saw, it is
    // ours, and it stays the one the pidfd signals.
    if (startTime(proc.pid) !== proc.start) return false;
    return native.pidfdSendSignal(pidfd, os.constants.signals[signal]);
  } finally {
    native.closeFd(pidfd);
  }
}
