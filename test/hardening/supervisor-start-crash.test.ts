/**
 * Issue 28, item 4: the supervisor that replaces a crashed one is itself killed while it starts
 * (before its hello, or once it has adopted the vault's leases). Every supervisor that comes up
 * after that must take over what is owed: the leases the vault keeps (a lease the runtime released
 * meanwhile is released there, one it holds stays held) and the lost job's cleanup, which is
 * reported only once it succeeded. Kernel truth: the lost job's processes by /proc and a FIFO every
 * one of them holds; the host's lease through a second runtime in another process.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { EofOracle, isRunning, waitForFile } from '../helpers/kernel.js';
import { LineChild } from '../helpers/line-child.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { dieAtNextSupervisorStart, failCleanupsOfNextSupervisor, killSupervisor, settledLostCleanups, supervisorInstance, waitFor } from '../../src/testing.js';

/** `promise`'s value, or `fallback` once `ms` have passed (a hang turned into an answer). */
async function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe.each(modeRows())('a supervisor killed while it starts, right after a crash (%s)', (mode, skip) => {
  it.skipIf(skip).each(['hello', 'hello-adopted'] as const)(
    'killed at %s: the next one takes over the leases and the lost job\'s cleanup',
    { timeout: 120_000 },
    async (step) => {
      const dir = tempDir();
      const lockDir = path.join(dir, 'locks');
      const runtime = await startRuntime(mode, { lockDir });
      const host = await runtime.locks.acquire({ label: 'host' }, ['worktree:takeover']);
      const oracle = new EofOracle();
      const pidFile = path.join(dir, 'sleep.pid');
      let second: LineChild | undefined;
      try {
        const job = await runtime.background({ command: `${oracle.prefix}sleep 1000 & echo $! > ${pidFile}; echo up; wait`, locks: ['port:6210'] });
        await waitForOutput(runtime, job.id, 'up');
        const sleeper = Number((await waitForFile(pidFile)).trim());
        expect(isRunning(sleeper)).toBe(true); // negative control of the oracle below
        // At the moment the lost job is reported cleaned up, its processes must be gone.
        let runningAtCleanup: boolean | null = null;
        runtime.onJobEvent((event) => {
          if (event.type === 'cleaned-up' && event.job === job.id) runningAtCleanup = isRunning(sleeper);
        });

        const crashed = supervisorInstance(runtime);
        dieAtNextSupervisorStart(runtime, step);
        killSupervisor(runtime, 'SIGKILL');
        const lost = await waitFor(runtime, () => runtime.list().some((entry) => entry.id === job.id && entry.state === 'lost'), 10_000);
        expect(lost).toBe(true);
        await settledLostCleanups(runtime);
        // The cleanup owed is taken over by a later supervisor (started for it), and then reported.
        const cleaned = await waitFor(runtime, () => runningAtCleanup !== null, 20_000);
        expect({ cleaned, runningAtCleanup }).toEqual({ cleaned: true, runningAtCleanup: false });
        await oracle.waitEof();
        expect(supervisorInstance(runtime)).not.toBe(crashed);

        // The host's lease is still held (negative control: the second runtime waits) ...
        second = new LineChild(path.join(FIXTURES, 'lock-host.mjs'), [lockDir, 'worktree:takeover']);
        await second.next('waiting');
        expect(second.pending().some((line) => 'acquired' in line)).toBe(false);
        // ... and once released, the second runtime gets it.
        host.release();
        const acquired = await within(second.next('acquired'), 15_000, 'timed out' as const);
        expect(acquired).not.toBe('timed out');

        // The same runtime's next job on the lost job's resource is not stuck behind its own lease.
        const next = await runtime.background({ command: 'echo again', locks: ['port:6210'] });
        const ran = await waitFor(runtime, () => runtime.list().some((entry) => entry.id === next.id && entry.state === 'exited'), 30_000);
        expect(ran ? 'ran' : (await runtime.status(next.id)).text).toBe('ran');
      } finally {
        await second?.kill();
        oracle.dispose();
        fs.rmSync(pidFile, { force: true });
      }
    },
  );
});

describe.each(modeRows())('a lost job whose cleanup is refused (%s)', (mode, skip) => {
  it.skipIf(skip)('is not reported cleaned up, says why, and keeps its lock', { timeout: 60_000 }, async () => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const oracle = new EofOracle();
    onTestFinished(() => oracle.dispose());
    const job = await runtime.background({ command: `${oracle.prefix}sleep 1000 & echo up; wait`, locks: ['port:6211'] });
    await waitForOutput(runtime, job.id, 'up');
    let cleanedUp = false;
    runtime.onJobEvent((event) => {
      if (event.type === 'cleaned-up' && event.job === job.id) cleanedUp = true;
    });
    failCleanupsOfNextSupervisor(runtime);
    killSupervisor(runtime, 'SIGKILL');
    expect(await waitFor(runtime, () => runtime.list().some((entry) => entry.id === job.id && entry.state === 'lost'), 10_000)).toBe(true);
    await settledLostCleanups(runtime);
    const report = await runtime.status(job.id);
    expect({ cleanedUp, reported: report.cleanedUp }).toEqual({ cleanedUp: false, reported: false });
    expect(report.text).toMatch(/stopping what is left of it failed, so its locks stay held: EIO/);
    // Its lock is still held: the next job on it waits (and is given up on).
    const next = await runtime.background({ command: 'true', locks: ['port:6211'], answerWithinMs: 500 });
    expect(next.state).toBe('waiting');
    await runtime.kill(next.id);
    // What the refused cleanup left, the fresh supervisor's sweep of dead instances stopped.
    await oracle.waitEof();
  });
});
