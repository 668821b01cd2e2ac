/**
 * Where the supervisor spawns job leaders (supervisor/jobs/leader-spawn.ts): inline, on the
 * addon's spawner threads, or `auto` (the threads for spawns in quick succession). On the threads
 * several spawns run at once and a leader may exit before its spawn has answered: each job must
 * still get its own exit and leave nothing behind, and what escapes a job is still found
 * (the supervisor looks for orphans only in its main thread's children file, where the kernel puts
 * them, never in the spawner threads', which list leaders only).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { OVERLAP_WINDOW_MS } from '../../supervisor/jobs/leader-spawn.js';
import { supervisorDiagnostics, waitFor, withTestSwitches } from '../../src/testing.js';
import type { JobRuntime } from '../../src/index.js';
import { processesWithEnv } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime } from '../helpers/runtime.js';

const onThreads = async (runtime: JobRuntime) => (await supervisorDiagnostics(runtime)).spawnsOnThreads;

describe.each(modeRows())('spawn placement (%s)', (mode, skip) => {
  it.skipIf(skip)('on the threads: 40 jobs started at once each get their own exit, and nothing of them, escapers included, is left', async () => {
    const runtime = await startRuntime(mode, withTestSwitches({ maxJobs: 64, settleMs: 0 }, { spawnOn: 'threads' }));
    const tag = `HEPH_TEST_PLACEMENT=${process.pid}-${mode}`;
    const env = { ...process.env, HEPH_TEST_PLACEMENT: tag.split('=')[1] };
    // The oracle's negative control: a job that runs is found by the tag.
    const stayer = await runtime.background({ command: 'exec sleep 1000', env });
    await waitFor(runtime, () => processesWithEnv(tag).length > 0, 10_000);
    expect(processesWithEnv(tag).length).toBeGreaterThan(0);
    const before = await onThreads(runtime);

    // Every fourth leaves an orphan in a session of its own behind as it exits.
    const commands = Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? `setsid sleep 1000 & exit ${i}` : `exit ${i}`));
    const jobs = await Promise.all(commands.map((command) => runtime.background({ command, env })));
    const cleanedUp = () => jobs.every((job) => runtime.list().find((entry) => entry.id === job.id)?.cleanedUp === true);
    expect(await waitFor(runtime, cleanedUp, 30_000)).toBe(true);
    for (const [i, job] of jobs.entries()) expect(await runtime.status(job.id)).toMatchObject({ state: 'exited', exitCode: i });
    expect(await onThreads(runtime)).toBe(before + 40);

    await runtime.kill(stayer.id, { signal: 'KILL' });
    expect(processesWithEnv(tag)).toEqual([]);
  });

  it.skipIf(skip)('on the threads, under a stream of spawns (800 jobs, 64 at a time): no leader is taken for another job\'s straggler', async () => {
    // A leader cloned on a spawner thread holds a copy of the supervisor's descriptors until its
    // execve (the other jobs' pipes among them): a cleanup that looked among the spawner threads'
    // children for stragglers killed it now and then (3 of 1000 such jobs, "killed SIGKILL").
    const runtime = await startRuntime(mode, withTestSwitches({ maxJobs: 64, settleMs: 0, keepFinished: 1000 }, { spawnOn: 'threads' }));
    const events: string[] = [];
    runtime.onJobEvent((event) => events.push(`${event.type}:${event.job}`));
    const wrong: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < 800) {
        const code = next++ % 200;
        const job = await runtime.background({ command: `exit ${code}` });
        await waitFor(runtime, () => events.includes(`cleaned-up:${job.id}`), 20_000);
        const final = await runtime.status(job.id);
        if (final.state !== 'exited' || final.exitCode !== code) wrong.push(`job ${job.id}: ${final.header}`);
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    expect(wrong).toEqual([]);
  });

  it.skipIf(skip)('auto: a lone spawn runs inline, one of a burst on the threads; inline: none on the threads', async () => {
    const auto = await startRuntime(mode, { settleMs: 0, maxJobs: 64 });
    await auto.background({ command: 'exit 0' });
    // Idle for longer than the window: the next spawn is a lone one.
    await sleep(OVERLAP_WINDOW_MS * 4);
    const before = await onThreads(auto);
    await auto.background({ command: 'exit 0' });
    expect(await onThreads(auto)).toBe(before);
    await Promise.all(Array.from({ length: 10 }, () => auto.background({ command: 'exit 0' })));
    expect(await onThreads(auto)).toBeGreaterThan(before);

    const inline = await startRuntime(mode, withTestSwitches({ settleMs: 0, maxJobs: 64 }, { spawnOn: 'inline' }));
    await Promise.all(Array.from({ length: 10 }, () => inline.background({ command: 'exit 0' })));
    expect(await onThreads(inline)).toBe(0);
  });

  it('refuses a spawnOn it does not know, naming the ones it does', async () => {
    await expect(startRuntime(mode, withTestSwitches({}, { spawnOn: 'elsewhere' }))).rejects.toThrow('option spawnOn must be one of auto, inline, threads; received "elsewhere"');
  });
});
