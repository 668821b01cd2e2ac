/**
 * Issue 13 item 4, "a locked call answers in time", through the tools a model calls, on real
 * processes in both containment modes. A locked `background` still waits for its locks before it
 * spawns, but the call waits at most its `wait` (default 30 s): then it answers with the job
 * `waiting`, naming what it waits for and who holds it; the job keeps its place and starts when it
 * can, and the next answer tells the model it started. Giving up on a job that never started is
 * not a failure of its command.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { LOCKED_CALL_WAIT_MS } from '../../src/runtime/options.js';
import { waitFor } from '../../src/testing.js';
import { settled, uniquePort } from '../helpers/calls.js';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows, type Mode } from '../helpers/modes.js';
import { startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';


const approve = async () => 'once' as const;

/** A runtime and its tools, with job 0 (`exec sleep 60`, holding `holder`'s FIFO) holding a fresh port. */
async function holding(mode: Mode, holder: EofOracle) {
  const runtime = await startRuntime(mode);
  const tools = createTools(runtime, { approve });
  const resource = uniquePort();
  const first = await tools.background.call({ command: `${holder.prefix}exec sleep 60`, locks: [resource] });
  expect(first.job?.state).toBe('running');
  return { runtime, tools, resource };
}

describe.each(modeRows())('a locked background answers in time (%s)', (mode, skip) => {
  it.skipIf(skip)('with wait 1: answers `waiting` naming the holder; the job starts once the holder is gone, and the next answer says so', async () => {
    const holder = new EofOracle();
    try {
      const { runtime, tools, resource } = await holding(mode, holder);
      const marker = path.join(tempDir(), 'second-ran');

      const answer = await tools.background.call({ command: `touch ${marker}; echo second-ran; exec sleep 60`, locks: [resource], wait: 1 });
      expect(answer.isError).toBe(false);
      expect(answer.job).toMatchObject({ id: 1, state: 'waiting', pid: null, wants: [{ resource, mode: 'exclusive' }] });
      expect(answer.job?.blockedBy).toMatchObject([{ holding: true, owner: { kind: 'job', jobId: 0 }, wants: { resource } }]);
      const lines = answer.text.split('\n');
      expect(lines[0]).toMatch(/^job 1 waiting \d:\d\d touch /);
      expect(answer.text).toContain(`${resource} is held by job 0 (${holder.prefix}exec sleep 60)`);
      expect(lines.at(-1)).toBe(
        `job 1 has not started: it waits for its locks: ${resource}. job_status {"id": 1} shows when it runs; job_kill {"id": 1} gives up on it.`,
      );
      // It never ran: kernel truth (the file it would make), and the holder still runs.
      expect(fs.existsSync(marker)).toBe(false);
      expect(holder.closed).toBe(false);
      expect(runtime.list().find((job) => job.id === 1)?.state).toBe('waiting');

      // The holder ends (the user's /job-kill: no answer to the model): the job keeps its place
      // and starts by itself.
      expect((await tools.userKillCall(0)).job?.state).toBe('killed');
      await holder.waitEof();
      expect(await waitFor(runtime, () => runtime.list().find((job) => job.id === 1)?.state === 'running', 10_000)).toBe(true);
      await waitForOutput(runtime, 1, 'second-ran');
      expect(fs.existsSync(marker)).toBe(true);

      // The next answer of any tool tells the model, once. (It reports job 0's end itself, so
      // that end is heard, not told again.)
      const next = await tools.job_status.call({ id: 0 });
      expect(next.job?.state).toBe('killed');
      expect(next.notices?.map((notice) => notice.text)).toEqual([
        expect.stringMatching(/^\(job 1 running \d:\d\d touch .*: started after waiting for its locks; 1 new line; job_status \{"id": 1\} reads it\)$/),
      ]);
      expect(next.text.split('\n').at(-1)).toBe(next.notices?.[0]?.text);
      const after = await tools.job_status.call({ id: 0 });
      expect(after.notices ?? []).toEqual([]);
    } finally {
      holder.dispose();
    }
  });

  it.skipIf(skip)('without wait, the call waits up to the default (30 s) and answers as soon as the job runs', async () => {
    expect(LOCKED_CALL_WAIT_MS).toBe(30_000);
    const holder = new EofOracle();
    try {
      const { runtime, tools, resource } = await holding(mode, holder);
      const call = tools.background.call({ command: 'echo second-ran; exec sleep 60', locks: [resource] });
      expect(await waitFor(runtime, () => runtime.list().some((job) => job.id === 1 && job.state === 'waiting'), 10_000)).toBe(true);
      expect(await settled(call)).toBe(false); // it waits for the locks meanwhile
      await runtime.kill(0);
      const answer = await call;
      expect(answer.job).toMatchObject({ id: 1, state: 'running' });
    } finally {
      holder.dispose();
    }
  });

  it.skipIf(skip)('giving up on a job that waits (job_kill, a cancelled or timed-out wait) says it never started, not that its command failed', async () => {
    const holder = new EofOracle();
    try {
      const { runtime, tools, resource } = await holding(mode, holder);

      // job_kill of the waiting job.
      const queued = await tools.background.call({ command: 'echo never', locks: [resource], wait: 0 });
      expect(queued.job?.state).toBe('waiting');
      const killed = await tools.job_kill.call({ id: queued.job!.id });
      expect(killed.isError).toBe(false);
      expect(killed.job).toMatchObject({ state: 'cancelled', pid: null });
      expect(killed.text).toMatch(/^job 1 cancelled \d:\d\d echo never\n/);
      expect(killed.text).toContain('never started');
      expect(killed.text).not.toMatch(/failed|could not start|command or its working directory/);

      // The runtime's own wait given up (its signal), and a lock timeout.
      const stop = new AbortController();
      const aborted = runtime.background({ command: 'echo never', locks: [resource], signal: stop.signal });
      expect(await waitFor(runtime, () => runtime.list().some((job) => job.id === 2 && job.state === 'waiting'), 10_000)).toBe(true);
      stop.abort();
      const abortedReport = await aborted;
      expect(abortedReport.state).toBe('cancelled');
      expect(abortedReport.text).not.toMatch(/failed|could not start|command or its working directory/);
      const timedOut = await runtime.background({ command: 'echo never', locks: [resource], lockTimeoutMs: 50 });
      expect(timedOut.state).toBe('cancelled');
      expect(timedOut.text).toContain('gave up waiting for its locks');
      expect(timedOut.text).not.toMatch(/failed|could not start|command or its working directory/);

      // Negative control: a command that really cannot start is still `failed`, with that advice.
      const bad = await tools.background.call({ command: 'true' }, { cwd: path.join(tempDir(), 'missing') });
      expect(bad.job?.state).toBe('failed');
      expect(bad.text).toContain('command or its working directory');
      expect(holder.closed).toBe(false);
    } finally {
      holder.dispose();
    }
  });
});
