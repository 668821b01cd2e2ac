/**
 * Resource locks end to end: locked background calls wait, start in arrival order, hold their
 * resources until their job is cleaned up; /job-kill works while others wait; a second runtime in
 * another process is excluded by the supervisor's kernel locks, even across a crash.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import type { JobRuntime } from '../../src/index.js';
import { see, waitForFile, waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { killSupervisor, settledLostCleanups, supervisorInstance, waitFor, toolPort } from '../../src/testing.js';

/** A job that records its pids (leader and a child) in DIR/NAME, then prints "up". */
function recordingJob(dir: string, name: string): string {
  // Each process as pid and start time (field 22 of /proc/PID/stat): a pid alone may be recycled
  // by the time it is checked (other tests on the machine recycle pids on purpose).
  return `sleep 1000 & for p in $$ $!; do echo "$p $(cut -d' ' -f22 /proc/$p/stat)"; done > ${dir}/${name}.tmp; mv ${dir}/${name}.tmp ${dir}/${name}; echo up; wait`;
}

/** A job that first checks that no process recorded in DIR/NAME still exists (zombies count):
 * the same pid with the same start time is the same process. */
function checkingJob(dir: string, name: string): string {
  return `while read p s; do [ "$(cut -d' ' -f22 /proc/$p/stat 2>/dev/null)" = "$s" ] && echo "overlap $p $(cat /proc/$p/stat)"; done < ${dir}/${name}; echo started; exec sleep 1000`;
}

function state(runtime: JobRuntime, id: number): string | undefined {
  return runtime.list().find((job) => job.id === id)?.state;
}

describe.each(modeRows())('resource locks (%s)', (mode, skip) => {
  it.skipIf(skip)('a second job needing the same port waits, and starts only after the first is gone', async () => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const dir = tempDir();
    const first = await runtime.background({ command: recordingJob(dir, 'first'), locks: ['port:5173'] });
    expect(first.state).toBe('running');
    await waitForOutput(runtime, first.id, 'up');
    const second = runtime.background({ command: checkingJob(dir, 'first'), locks: ['port:5173'] });
    await waitFor(runtime, () => state(runtime, first.id + 1) === 'waiting', 5000);
    expect(runtime.list().find((job) => job.id === first.id + 1)?.text).toContain('waits for its locks: port:5173');
    expect(toolPort(runtime).held(first.id).map((res) => res.resource)).toEqual(['port:5173']);
    await runtime.kill(first.id);
    const report = await second;
    expect(report.state).toBe('running');
    const lines = (await waitForOutput(runtime, report.id, 'started')).split('\n');
    expect(lines.filter((line) => line.startsWith("> overlap"))).toEqual([]);
  });

  it.skipIf(skip)('three waiters start in arrival order', async () => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const holder = await runtime.background({ command: 'exec sleep 1000', locks: ['port:7000'] });
    const order: number[] = [];
    const waiters = [0, 1, 2].map(() =>
      runtime.background({ command: 'exec sleep 1000', locks: ['port:7000'] }).then((report) => {
        order.push(report.id);
        return report;
      }),
    );
    const ids = [holder.id + 1, holder.id + 2, holder.id + 3];
    await waitFor(runtime, () => ids.every((id) => state(runtime, id) === 'waiting'), 5000);
    let current = holder.id;
    for (const next of ids) {
      await runtime.kill(current);
      await waitFor(runtime, () => state(runtime, next) === 'running', 10_000);
      // Only the next in line started; the others still wait.
      for (const later of ids.filter((id) => id > next)) expect(state(runtime, later)).toBe('waiting');
      current = next;
    }
    await Promise.all(waiters);
    expect(order).toEqual(ids);
  });

  it.skipIf(skip)('/job-kill stops the holder while another call waits, which then proceeds', async () => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const holder = await runtime.background({ command: 'exec sleep 1000', locks: ['worktree:main'] });
    const publication = runtime.locks.acquire({ label: 'publication' }, ['worktree:main']);
    await waitFor(runtime, () => runtime.locks.waiting === 1, 5000);
    const killed = await toolPort(runtime).userKill(holder.id);
    expect(killed.state).toBe('killed');
    const lease = await publication;
    expect(lease.resources.map((res) => res.resource)).toEqual(['worktree:main']);
    lease.release();
  });

  it.skipIf(skip)('a waiting call cancelled by job_kill holds nothing and spawns nothing', async () => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const holder = await runtime.background({ command: 'exec sleep 1000', locks: ['port:1', 'port:2'] });
    const waiting = runtime.background({ command: 'echo should-not-run', locks: ['port:2', 'port:3'] });
    await waitFor(runtime, () => state(runtime, holder.id + 1) === 'waiting', 5000);
    const cancelled = await runtime.kill(holder.id + 1);
    expect(cancelled.state).toBe('cancelled'); // it never started: not a failure of its command (issue 13 item 4)
    expect((await waiting).pid).toBeNull();
    // port:3 was never held: it is free right now.
    (await runtime.locks.acquire({ label: 'probe' }, ['port:3'], { wait: false })).release();
    expect(runtime.locks.snapshot().waiters).toEqual([]);
  });
});

describe('locks across runtimes', () => {
  it('a second runtime gets the resource only after the first job is cleaned up, even when the first runtime is SIGKILLed', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const dir = tempDir();
    // The first runtime lives in its own process so it can be SIGKILLed.
    const first = spawn(process.execPath, [path.join(FIXTURES, 'runtime-host.mjs'), 'process-group', recordingJob(dir, 'job')], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, HEPH_TEST_LOCKS: 'port:6000', HEPH_TEST_LOCK_DIR: lockDir },
    });
    const firstLines = readline.createInterface({ input: first.stdout! });
    const ready = new Promise<string>((resolve) => firstLines.once('line', resolve));
    let second: ReturnType<typeof spawn> | undefined;
    try {
      await ready;
      const pids = (await waitForFile(path.join(dir, 'job'))).trim().split('\n').map((line) => line.split(' ')[0]!);
      for (const pid of pids) see(Number(pid));
      second = spawn(process.execPath, [path.join(FIXTURES, 'lock-host.mjs'), lockDir, 'port:6000', ...pids], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const secondLines = readline.createInterface({ input: second.stdout! });
      const messages: Record<string, unknown>[] = [];
      secondLines.on('line', (line) => messages.push(JSON.parse(line)));
      await waitUntil(() => messages.some((message) => message.waiting), 'the second runtime to wait');
      expect(messages.some((message) => message.acquired)).toBe(false);
      first.kill('SIGKILL');
      await waitUntil(() => messages.some((message) => message.acquired), 'the second runtime to acquire', 15_000);
      expect(messages.find((message) => message.acquired)).toMatchObject({ acquired: true, present: [], alive: [] });
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGKILL');
    }
  });
});

describe('host leases across a supervisor crash', () => {
  it('a lease the host holds is taken again by the fresh supervisor, so another runtime stays excluded', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const host = await startRuntime('process-group', { lockDir });
    const other = await startRuntime('process-group', { lockDir });
    const lease = await host.locks.acquire({ label: 'shell: git push' }, ['worktree:main']);
    // By instance, not pid: the fresh supervisor may get the dead one's pid.
    const oldSupervisor = supervisorInstance(host);
    killSupervisor(host, 'SIGKILL');
    // Once the runtime has noticed, its cleanup includes taking the host's leases again.
    await waitUntil(() => supervisorInstance(host) !== oldSupervisor, 'the runtime to notice its supervisor died');
    await settledLostCleanups(host);
    expect(supervisorInstance(host)).not.toBe(oldSupervisor);
    // Still excluded: the kernel lock is held again, now by the fresh supervisor.
    await expect(other.locks.acquire({ label: 'other runtime' }, ['worktree:main'], { timeoutMs: 300 })).rejects.toMatchObject({
      code: 'ERR_LOCK_TIMEOUT',
    });
    lease.release();
    const taken = await other.locks.acquire({ label: 'other runtime' }, ['worktree:main'], { timeoutMs: 10_000 });
    taken.release();
  });
});
