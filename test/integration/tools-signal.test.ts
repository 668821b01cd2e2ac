/**
 * A call's `signal` (ToolContext) stops the call's waiting, not what it waits for: the shell's
 * Ctrl-C and an MCP client's cancellation come through it. A job waiting for its locks keeps its
 * place and runs once they are free; a status wait answers with the job as it is, which runs on.
 */
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { settled, uniquePort } from '../helpers/calls.js';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, waitForOutput } from '../helpers/runtime.js';
import { waitFor } from '../../src/testing.js';


describe.each(modeRows())('a call stopped by its signal (%s)', (mode, skip) => {
  it.skipIf(skip)('background: the call answers with the waiting job, which keeps its place and runs once the locks are free', async () => {
    const oracle = new EofOracle();
    try {
      const runtime = await startRuntime(mode);
      const tools = createTools(runtime, { approve: async () => 'once' });
      const resource = uniquePort();
      const holder = await tools.background.call({ command: `${oracle.prefix}exec sleep 60`, locks: [resource] });
      expect(holder.job?.state).toBe('running');

      const stop = new AbortController();
      const call = tools.background.call({ command: 'echo second-ran', locks: [resource] }, { signal: stop.signal });
      expect(await waitFor(runtime, () => runtime.list().some((job) => job.id === 1 && job.state === 'waiting'), 10_000)).toBe(true);
      expect(await settled(call)).toBe(false); // negative control: without the signal the call waits with its job
      stop.abort();
      const answer = await call;
      expect(answer.isError).toBe(false);
      expect(answer.job).toMatchObject({ id: 1, state: 'waiting', wants: [{ resource, mode: 'exclusive' }] });
      expect(answer.text.split('\n').at(-1)).toBe(
        `job 1 has not started: it waits for its locks: ${resource}. job_status {"id": 1} shows when it runs; job_kill {"id": 1} gives up on it.`,
      );
      // Its place is kept: still queued, and it runs as soon as the holder is gone.
      expect(runtime.list().find((job) => job.id === 1)?.state).toBe('waiting');
      await tools.userKill(0);
      await oracle.waitEof();
      await waitForOutput(runtime, 1, 'second-ran');
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('job_status with a wait: the call answers at once with the job as it is; the job runs on', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    await tools.background.call({ command: 'echo hello; exec sleep 60' });
    await waitForOutput(runtime, 0, 'hello');

    // Negative control: a wait that is not stopped runs its course and says so.
    const waited = await tools.job_status.call({ id: 0, wait: 0.2 });
    expect(waited.job?.waited).toMatchObject({ kind: 'timed-out' });

    const stop = new AbortController();
    const call = tools.job_status.call({ id: 0, wait: 600 }, { signal: stop.signal });
    expect(await settled(call)).toBe(false);
    stop.abort();
    const answer = await call;
    expect(answer.job).toMatchObject({ id: 0, state: 'running', waited: null });
    expect(answer.job?.output?.lines.map((line) => line.text)).toEqual(['hello']);
    expect(runtime.list()[0]?.state).toBe('running');
  });

  it.skipIf(skip)('a wait for the tool\'s own lock rules is given up: nothing is read', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once', rules: { job_status: ['worktree:{ref}'] } });
    await tools.background.call({ command: 'exec sleep 60' });
    const other = await runtime.locks.acquire({ label: 'git push', kind: 'host' }, ['worktree:main']);
    try {
      const stop = new AbortController();
      const call = tools.job_status.call({ id: 0 }, { ref: 'main', signal: stop.signal });
      expect(await settled(call)).toBe(false);
      stop.abort();
      const answer = await call;
      expect(answer.isError).toBe(true);
      expect(answer.text).toMatch(/^job_status: the wait for its locks was cancelled: .*"git push".* Nothing was read\.$/);
    } finally {
      other.release();
    }
  });
});
