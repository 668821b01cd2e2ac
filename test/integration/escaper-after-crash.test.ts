/**
 * Item 10 of issue 12, as issue 28 restated it: a job process that leaves the job's session and
 * clears its environment (`env -i setsid -f CMD`) keeps nothing that proves it the job's but its
 * cgroup. Its pipes prove nothing (anyone of the user can open them, pipe-holders.test.ts), so in
 * cgroup mode job_kill and the cleanup after a supervisor crash stop it through its cgroup, and in
 * process-group mode it escapes both, as capabilities().limitations says; this test holds the
 * statement to the truth (and then stops it itself).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobRuntime } from '../../src/index.js';
import { environContains, readProcStat } from '../../supervisor/platform/procfs.js';
import { EofOracle, isReaped, isRunning, see, waitForFile, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { signalIfSame } from '../helpers/signal.js';
import { modeRows, type Mode } from '../helpers/modes.js';
import { startRuntime, tempDir } from '../helpers/runtime.js';
import { killSupervisor, settledLostCleanups, supervisorHello, waitFor } from '../../src/testing.js';

/** A job whose only other process is `env -i setsid -f`'d (no marker, its own session), holding the oracle's FIFO. */
async function startEscaper(runtime: JobRuntime, oracle: EofOracle): Promise<{ id: number; leader: SeenProcess; escaper: SeenProcess }> {
  const pidFile = path.join(tempDir(), 'escaper');
  const job = await runtime.background({
    command: `${oracle.prefix} env -i setsid -f /bin/sh -c 'echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 1000'; exec sleep 1000`,
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

type Escaper = Awaited<ReturnType<typeof startEscaper>>;

/** Runs `body` on a fresh runtime with an escaper job started; stops the escaper after, whatever happened. */
async function withEscaper(mode: Mode, body: (runtime: JobRuntime, started: Escaper, oracle: EofOracle) => Promise<void>): Promise<void> {
  const runtime = await startRuntime(mode);
  const oracle = new EofOracle();
  let escaper: SeenProcess | null = null;
  try {
    const started = await startEscaper(runtime, oracle);
    escaper = started.escaper;
    await body(runtime, started, oracle);
  } finally {
    // The test stops what it started (checked to be the same process first).
    if (escaper !== null) signalIfSame(escaper, 'SIGKILL');
    if (escaper !== null) await waitUntil(() => isReaped(escaper!), 'the escaper reaped');
    oracle.dispose();
  }
}

async function crashSupervisor(runtime: JobRuntime, id: number): Promise<void> {
  killSupervisor(runtime, 'SIGKILL');
  await waitFor(runtime, () => runtime.list().find((entry) => entry.id === id)?.state === 'lost', 10_000);
  await settledLostCleanups(runtime);
}

const LIMITATION = 'One that leaves the session and clears its environment (e.g. `env -i setsid -f CMD`) escapes job_kill';

describe.each(modeRows())('a job process that ran `env -i setsid -f` (%s)', (mode, skip) => {
  it.skipIf(skip)(
    mode === 'cgroup' ? 'is stopped by job_kill, through its cgroup' : 'escapes job_kill, as capabilities().limitations says',
    () => withEscaper(mode, async (runtime, started, oracle) => {
      const { escaper } = started;
      expect(await oracle.eofWithin(200)).toBe(false);
      const report = await runtime.kill(started.id);
      expect(report.cleanedUp).toBe(true);
      expect(isReaped(started.leader)).toBe(true);
      if (mode === 'cgroup') {
        await oracle.waitEof(10_000);
        expect(isReaped(escaper)).toBe(true);
        return;
      }
      expect((await runtime.capabilities()).limitations.join('\n')).toContain(LIMITATION);
      expect(isRunning(escaper.pid) && !isReaped(escaper)).toBe(true);
      expect(await oracle.eofWithin(300)).toBe(false);
      // close() still reaches it: the subreaper made it our descendant.
      await runtime.close();
      await oracle.waitEof(10_000);
      expect(isReaped(escaper)).toBe(true);
    }),
  );

  it.skipIf(skip)(
    mode === 'cgroup'
      ? 'is stopped after a supervisor crash, through its cgroup'
      : 'survives a supervisor crash, as capabilities().limitations says',
    () => withEscaper(mode, async (runtime, started, oracle) => {
      const { escaper } = started;
      const limitations = (await runtime.capabilities()).limitations.join('\n');
      await crashSupervisor(runtime, started.id);
      if (mode === 'cgroup') {
        await oracle.waitEof(10_000);
        await waitUntil(() => isReaped(started.escaper), 'the escaper reaped');
        return;
      }
      expect(limitations).toContain(LIMITATION);
      expect(limitations).toContain('if the supervisor dies first it is reparented to init');
      await waitUntil(() => isReaped(started.leader), 'the leader reaped');
      // As stated: it survives the cleanup, reparented (to init, or the nearest subreaper).
      expect(isRunning(escaper.pid) && !isReaped(escaper)).toBe(true);
      expect(readProcStat(escaper.pid)!.ppid).not.toBe(supervisorHello(runtime)?.pid);
      expect(await oracle.eofWithin(300)).toBe(false);
      // close() does not reach it either.
      await runtime.close();
      expect(isRunning(escaper.pid) && !isReaped(escaper)).toBe(true);
    }),
  );
});
