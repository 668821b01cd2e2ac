/**
 * Issue 12, item 4: a model's `until` pattern must never freeze a process. `(a+)+$` against a line
 * of a's ending in "!" backtracks exponentially in JavaScript's engine (the negative control shows
 * it, in a worker thread that the test can stop); the supervisor matches with a linear-time engine
 * (RE2 semantics), so the wait answers when its time is up, and other calls, /job-kill among them,
 * are answered meanwhile.
 */
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { EofOracle } from '../helpers/kernel.js';
import { within } from '../helpers/hardening.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, waitForOutput } from '../helpers/runtime.js';

/** The catastrophic pattern, and a line it never matches: every split of the a's is tried. */
const PATTERN = '(a+)+$';
const LINE = `${'a'.repeat(32)}!`;
/** Generous for a loaded 2-core machine: the wait asks for 2 s; JavaScript's engine needs minutes. */
const BOUND_MS = 5_000;

describe('negative control: JavaScript\'s own engine on the same input', () => {
  it(`does not finish ${PATTERN} against the line within ${BOUND_MS} ms`, async () => {
    const worker = new Worker(
      "const { parentPort, workerData } = require('node:worker_threads'); parentPort.postMessage(new RegExp(workerData.pattern).test(workerData.line));",
      { eval: true, workerData: { pattern: PATTERN, line: LINE } },
    );
    try {
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        new Promise<string>((resolve) => worker.once('message', () => resolve('finished'))),
        new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), BOUND_MS))),
      ]);
      clearTimeout(timer);
      expect(outcome).toBe('still running');
    } finally {
      await worker.terminate();
    }
  });
});

describe.each(modeRows())('a hostile until pattern (%s)', (mode, skip) => {
  it.skipIf(skip)('answers within its wait, and other calls and /job-kill are answered meanwhile', async () => {
    const oracle = new EofOracle();
    try {
      const runtime = await startRuntime(mode);
      const tools = createTools(runtime, { approve: async () => 'once' });
      const target = await runtime.background({ command: `printf '%s\\n' '${LINE}'; exec sleep 60` });
      await waitForOutput(runtime, target.id, LINE);
      const other = await runtime.background({ command: `${oracle.prefix}exec sleep 60` });

      const started = Date.now();
      const waiting = tools.job_status.call({ id: target.id, since: -1, wait: 2, until: PATTERN });
      // While the wait runs: a read of another job and the user's /job-kill of it are answered.
      const read = await within(tools.job_status.call({ id: other.id }), BOUND_MS, 'a read of another job during the wait');
      expect(read.isError).toBe(false);
      const killed = await within(tools.userKillCall(other.id), BOUND_MS, '/job-kill of another job during the wait');
      expect(killed).toMatchObject({ isError: false, job: { state: 'killed', signal: 'SIGTERM' } });
      await oracle.waitEof();

      const answer = await within(waiting, BOUND_MS, 'the wait with the hostile pattern');
      const took = Date.now() - started;
      console.log(`[${mode}] job_status with until ${PATTERN} and wait 2 answered after ${took} ms`);
      expect(answer.isError).toBe(false);
      expect(answer.text).toContain(`no new line matched /${PATTERN}/`);
      expect(took).toBeLessThan(BOUND_MS);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('what the linear-time engine cannot run is refused with a sentence saying why, before anything runs', async () => {
    const runtime = await startRuntime(mode);
    const asked: string[] = [];
    const tools = createTools(runtime, { approve: async ({ pattern }) => (asked.push(pattern), 'once') });
    const backreference = await tools.background.call({ command: 'echo hi', wait: 1, until: '(a)\\1' });
    expect(backreference.isError).toBe(true);
    expect(backreference.text).toMatch(/backreference \\1.*RE2/);
    const lookahead = await tools.job_status.call({ id: 0, wait: 1, until: 'ready(?=!)' });
    expect(lookahead.isError).toBe(true);
    expect(lookahead.text).toMatch(/lookahead \(\?=.*RE2/);
    const lookbehind = await tools.background.call({ command: 'echo hi', wait: 1, until: '(?<!not )ready' });
    expect(lookbehind.isError).toBe(true);
    expect(lookbehind.text).toMatch(/lookbehind \(\?<!.*RE2/);
    expect(asked).toEqual([]);
    expect(runtime.list()).toEqual([]);
    // The library refuses them too, with the same reason.
    await expect(runtime.background({ command: 'echo hi', waitMs: 100, until: /(a)\1/ })).rejects.toThrow(/backreference \\1/);
  });
});
