/**
 * The supervisor's early word of its runtime's death: the kernel's parent-death signal
 * (PR_SET_PDEATHSIG), which a dying runtime sends when the thread that spawned the supervisor
 * exits, before the runtime's memory is torn down and its files (the channel) are closed. Only
 * that signal counts: the same signal number from any other process is ignored.
 *
 * The death itself is not staged here (which of a dying process's threads exits last is up to
 * the scheduler, so whether the signal or the channel's EOF comes first is too; the crash figure
 * of `npm run bench` measures it). What is shown, in both containment modes, is that the signal
 * alone stops everything, while the runtime lives and the channel stays open: the runtime, this
 * process, sends it itself, so it comes as the kernel's would (SI_USER, from the parent's pid).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EofOracle, isReaped, isRunning, see, waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, waitForOutput } from '../helpers/runtime.js';
import { supervisorPid } from '../../src/testing.js';
import { BOUNDED } from '../helpers/bounded.js';

/** SIGRTMIN + 4 under glibc (SIGRTMIN is 34: glibc keeps 32 and 33 for itself), as native/process.cc picks it. */
const PARENT_DEATH_SIGNAL = 38;

/** A signal's bit in a /proc/PID/status mask line (`SigCgt`, `SigPnd`, `ShdPnd`: hex, bit n-1 for signal n). */
function inMask(pid: number, field: string, signal: number): boolean {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
  const hex = new RegExp(`^${field}:\\s*([0-9a-f]+)$`, 'm').exec(status)?.[1];
  if (hex === undefined) throw new Error(`no ${field} in /proc/${pid}/status`);
  return ((BigInt(`0x${hex}`) >> BigInt(signal - 1)) & 1n) === 1n;
}

describe.each(modeRows())('the parent-death signal (%s)', (mode, skip) => {
  it.skipIf(skip)('stops every job and the supervisor while the runtime lives; from another process it is ignored', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    try {
      const job = await runtime.background({ command: `${oracle.prefix} echo ready; exec sleep 1000` });
      await waitForOutput(runtime, job.id, 'ready');
      const pid = supervisorPid(runtime)!;
      const supervisor = see(pid);
      const leader = see(job.pid!);
      // The supervisor catches the signal this test sends (else the numbers drifted apart).
      expect(inMask(pid, 'SigCgt', PARENT_DEATH_SIGNAL)).toBe(true);

      // Negative control: the same signal from a stranger (a process of its own, not our parent).
      execFileSync(process.execPath, ['-e', `process.kill(${pid}, ${PARENT_DEATH_SIGNAL})`], BOUNDED);
      await waitUntil(
        () => !inMask(pid, 'SigPnd', PARENT_DEATH_SIGNAL) && !inMask(pid, 'ShdPnd', PARENT_DEATH_SIGNAL),
        "the stranger's signal delivered",
      );
      // Two round trips after its delivery: a handler that took it would have stopped the job.
      expect((await runtime.status(job.id)).state).toBe('running');
      expect((await runtime.status(job.id)).state).toBe('running');
      expect(isRunning(pid)).toBe(true);
      expect(isRunning(job.pid!)).toBe(true);
      expect(oracle.closed).toBe(false);

      // The same signal from the runtime itself, as the kernel sends it when the runtime dies.
      process.kill(pid, PARENT_DEATH_SIGNAL);
      await oracle.waitEof(10_000);
      await waitUntil(() => isReaped(supervisor) && isReaped(leader), 'the supervisor and the job reaped', 10_000);
      expect(runtime.list()[0]?.state).not.toBe('running');
    } finally {
      oracle.dispose();
    }
  });
});
