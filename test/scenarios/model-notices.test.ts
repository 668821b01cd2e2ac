/**
 * Issue 13 item 1, "told when a job ends", through the tools a model calls, on real processes in
 * both containment modes: every answer ends with one line per job that ended since the model last
 * heard of it (its header, how many lines no answer has shown, the call that reads them), told
 * once; an answer that reports the end itself is hearing of it; `tools.notices()` gives (and
 * consumes) the lines due between turns; `notices: false` turns them off.
 */
import { describe, expect, it } from 'vitest';
import { createTools, type JobRuntime, type Tools } from '../../src/index.js';
import { waitFor } from '../../src/testing.js';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime } from '../helpers/runtime.js';

const approve = async () => 'once' as const;

/**
 * Job 0 runs on (`sleep 60`); job 1 prints `first`, then, once given a line on stdin (by the
 * host, not through the tools: the model does not hear of it), prints two more lines and exits 3.
 * The model's answers showed job 1's `first` line only. Resolves once job 1 has ended and every
 * process of it is gone (so its output is complete).
 */
async function endBetweenCalls(runtime: JobRuntime, tools: Tools, oracle: EofOracle, rest = 'echo "got $line"; echo last; exit 3'): Promise<void> {
  const sleeper = await tools.background.call({ command: 'exec sleep 60' });
  expect(sleeper.job?.state).toBe('running');
  const reader = await tools.background.call({
    command: `${oracle.prefix}echo first; read line; ${rest}`,
    stdin: true,
    wait: 10,
    until: 'first',
  });
  expect(reader.job?.output?.lines.map((line) => line.text)).toEqual(['first']);
  expect(reader.notices ?? []).toEqual([]);
  await runtime.input(1, { text: 'go\n' });
  await oracle.waitEof();
  expect(await waitFor(runtime, () => runtime.list().find((job) => job.id === 1)?.cleanedUp === true, 10_000)).toBe(true);
}

const ENDED_NOTICE = /^\(job 1 exited 3 \d:\d\d exec 9>.*exit 3: 2 new lines; job_status \{"id": 1\} reads them\)$/;

describe.each(modeRows())('notices of jobs that ended (%s)', (mode, skip) => {
  it.skipIf(skip)('the next answer of any tool carries one notice; the one after carries none', async () => {
    const oracle = new EofOracle();
    try {
      const runtime = await startRuntime(mode);
      const tools = createTools(runtime, { approve });
      await endBetweenCalls(runtime, tools, oracle);

      const next = await tools.job_status.call({ id: 0 });
      expect(next.job?.id).toBe(0);
      expect(next.notices).toEqual([{ id: 1, event: 'ended', state: 'exited', header: expect.stringMatching(/^job 1 exited 3 /), unread: 2, readFrom: null, text: expect.stringMatching(ENDED_NOTICE) }]);
      // The notice ends the text; it carries no output line of job 1.
      expect(next.text.split('\n').at(-1)).toMatch(ENDED_NOTICE);
      expect(next.text).not.toMatch(/got go|> last/);
      expect(next.text.startsWith(next.job!.text)).toBe(true);

      const after = await tools.job_status.call({ id: 0 });
      expect(after.notices).toBeUndefined();
      expect(after.text).toBe(after.job?.text);
      expect(await tools.notices()).toEqual([]);

      // Reading the lines it named shows them.
      const read = await tools.job_status.call({ id: 1 });
      expect(read.job?.output?.lines.map((line) => line.text)).toEqual(['first', 'got go', 'last']);
      expect(read.notices).toBeUndefined();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('more unread lines than a default read shows: the notice names the since read that shows them all', async () => {
    const oracle = new EofOracle();
    try {
      const runtime = await startRuntime(mode);
      const tools = createTools(runtime, { approve });
      await endBetweenCalls(runtime, tools, oracle, 'seq 1 120');
      const next = await tools.job_status.call({ id: 0 });
      expect(next.notices?.map((notice) => notice.text)).toEqual([
        expect.stringMatching(/^\(job 1 exited 0 \d:\d\d .*seq 1 120: 120 new lines; job_status \{"id": 1, "since": 0\} reads them\)$/),
      ]);
      const read = await tools.job_status.call({ id: 1, since: 0 });
      expect(read.job?.output?.lines.map((line) => line.text)).toEqual(Array.from({ length: 120 }, (_, i) => String(i + 1)));
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('an answer that reports the end itself is hearing of it: job_status of that job, a job_kill, the list', async () => {
    const oracle = new EofOracle();
    try {
      const runtime = await startRuntime(mode);
      const tools = createTools(runtime, { approve });
      await endBetweenCalls(runtime, tools, oracle);
      const own = await tools.job_status.call({ id: 1, lines: 1 });
      expect(own.job?.state).toBe('exited');
      expect(own.notices).toBeUndefined();
      expect((await tools.job_status.call({ id: 0 })).notices).toBeUndefined();

      // job_kill reports the end it caused; the list reports every job's state.
      const killed = await tools.job_kill.call({ id: 0 });
      expect(killed.job?.state).toBe('killed');
      expect(killed.notices).toBeUndefined();
      const started = await tools.background.call({ command: 'echo quick', wait: 10 });
      expect(started.job?.state).toBe('exited');
      expect(started.notices).toBeUndefined();
      expect((await tools.job_status.call({})).notices).toBeUndefined();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('tools.notices() returns the lines due between turns and consumes them; notices: false turns them off', async () => {
    const oracle = new EofOracle();
    try {
      const runtime = await startRuntime(mode);
      const tools = createTools(runtime, { approve });
      const quiet = createTools(runtime, { approve, notices: false });
      await endBetweenCalls(runtime, tools, oracle);
      // The same job's end through tools without notices: never told (negative control of the oracle above).
      const silent = await quiet.job_status.call({ id: 0 });
      expect(silent.notices).toBeUndefined();
      expect(silent.text).toBe(silent.job?.text);
      expect(await quiet.notices()).toEqual([]);

      expect(await tools.notices()).toEqual([expect.stringMatching(ENDED_NOTICE)]);
      expect(await tools.notices()).toEqual([]);
      expect((await tools.job_status.call({ id: 0 })).notices).toBeUndefined();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('a job the user stops with /job-kill is told to the model (the user heard of it, the model did not)', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve });
    const job = await tools.background.call({ command: 'echo one; echo two; exec sleep 60', wait: 10, until: 'two' });
    expect(job.job?.output?.lines.map((line) => line.text)).toEqual(['one', 'two']);
    expect((await tools.userKillCall(0)).job?.state).toBe('killed');
    const next = await tools.background.call({ command: 'echo other', wait: 10 });
    expect(next.job?.id).toBe(1);
    expect(next.notices?.map((notice) => notice.text)).toEqual([
      expect.stringMatching(/^\(job 0 killed SIGTERM \d:\d\d echo one; echo two; exec sleep 60: no new lines\)$/),
    ]);
  });
});
