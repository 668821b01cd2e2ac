/**
 * Item 10 of issue 12: a job process that leaves the job's session and clears its environment
 * (`env -i setsid -f CMD`) is found by the job's pipes, which it still holds: job_kill stops it,
 * and so does the cleanup after a supervisor crash, when it has been reparented to init. One that
 * also lets go of the pipes is the stated limitation of process-group mode: it survives the
 * supervisor's death; this test holds the statement to the truth (and then stops it itself).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobRuntime } from '../../src/index.js';
import { environContains, readProcStat } from '../../supervisor/platform/procfs.js';
import { EofOracle, isReaped, isRunning, see, waitForFile, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { signalIfSame } from '../helpers/signal.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, tempDir } from '../helpers/runtime.js';
import { killSupervisor, settledLostCleanups, supervisorHello, waitFor } from '../../src/testing.js';

/** A job whose only other process is `env -i setsid -f`'d (no marker, its own session); `quiet` also closes the pipes. */
async function startEscaper(runtime: JobRuntime, oracle: EofOracle, quiet: boolean): Promise<{ id: number; leader: SeenProcess; escaper: SeenProcess }> {
  const pidFile = path.join(tempDir(), 'escaper');
  const redirect = quiet ? ' </dev/null >/dev/null 2>&1' : '';
  const job = await runtime.background({
    command: `${oracle.prefix} env -i setsid -f /bin/sh -c 'echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 1000'${redirect}; exec sleep 1000`,
  });
  const escaper = see(Number(await waitForFile(pidFile)));
  // It escaped every other attribution: another session and group, no marker.
  const stat = readProcStat(escaper.pid)!;
  expect([stat.sid, stat.pgid]).toEqual([escaper.pid, escaper.pid]);
  const marker = `HEPH_JOB=${supervisorHello(runtime)!.instance.pid}-${supervisorHello(runtime)!.instance.start}:${job.id}`;
  expect(environContains(job.pid!, marker)).toBe(true);
  expect(environContains(escaper.pid, marker)).toBe(false);
  return { id: job.id, leader: see(job.pid!), escaper };
}

async function crashSupervisor(runtime: JobRuntime, id: number): Promise<void> {
  killSupervisor(runtime, 'SIGKILL');
  await waitFor(runtime, () => runtime.list().find((entry) => entry.id === id)?.state === 'lost', 10_000);
  await settledLostCleanups(runtime);
}

describe.each(modeRows())('a job process that ran `env -i setsid -f` (%s)', (mode, skip) => {
  it.skipIf(skip)('is stopped by job_kill, through the pipes it holds', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    try {
      const { id, escaper } = await startEscaper(runtime, oracle, false);
      expect(await oracle.eofWithin(200)).toBe(false);
      const report = await runtime.kill(id);
      expect(report.cleanedUp).toBe(true);
      await oracle.waitEof(10_000);
      expect(isReaped(escaper)).toBe(true);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('is stopped after a supervisor crash, when it has been reparented to init', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    try {
      const { id, escaper } = await startEscaper(runtime, oracle, false);
      await crashSupervisor(runtime, id);
      await oracle.waitEof(10_000);
      await waitUntil(() => isReaped(escaper), 'the escaper reaped');
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)(
    mode === 'cgroup'
      ? 'that also lets go of the pipes is stopped after a supervisor crash, through its cgroup'
      : 'that also lets go of the pipes survives a supervisor crash, as capabilities().limitations says',
    async () => {
      const runtime = await startRuntime(mode);
      const oracle = new EofOracle();
      let escaper: SeenProcess | null = null;
      try {
        const started = await startEscaper(runtime, oracle, true);
        escaper = started.escaper;
        const limitations = (await runtime.capabilities()).limitations.join('\n');
        await crashSupervisor(runtime, started.id);
        if (mode === 'cgroup') {
          await oracle.waitEof(10_000);
          await waitUntil(() => isReaped(started.escaper), 'the escaper reaped');
          return;
        }
        expect(limitations).toContain('One that leaves the session, clears its environment and lets go of those pipes');
        expect(limitations).toContain('`env -i setsid -f CMD </dev/null >/dev/null 2>&1`');
        expect(limitations).toContain('if the supervisor dies first it is reparented to init');
        await waitUntil(() => isReaped(started.leader), 'the leader reaped');
        // As stated: it survives the cleanup, reparented (to init, or the nearest subreaper).
        expect(isRunning(escaper.pid) && !isReaped(escaper)).toBe(true);
        expect(readProcStat(escaper.pid)!.ppid).not.toBe(supervisorHello(runtime)?.pid);
        expect(await oracle.eofWithin(300)).toBe(false);
        // close() does not reach it either.
        await runtime.close();
        expect(isRunning(escaper.pid) && !isReaped(escaper)).toBe(true);
      } finally {
        // The test stops what it started (checked to be the same process first).
        if (escaper !== null) signalIfSame(escaper, 'SIGKILL');
        if (escaper !== null) await waitUntil(() => isReaped(escaper!), 'the escaper reaped');
        oracle.dispose();
      }
    },
  );
});
