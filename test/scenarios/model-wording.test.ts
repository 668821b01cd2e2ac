/**
 * Issue 13, item 10: wording the model can act on. Each case runs the tools a model calls against
 * real processes and asserts the new sentence, and that the sentence it replaced is gone:
 * - a job that ignored INT and still runs says so and names the next signal (TERM, then KILL);
 * - job_kill on a job that had already ended says it had ended, and how, not that it stopped it;
 * - job_input and job_restart errors say what they did not do in their own words;
 * - an id sent as a numeric string ("0") is accepted by every tool;
 * - a bad input names the field and the rule in one sentence, without repeating the schema.
 */
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, waitForOutput } from '../helpers/runtime.js';
import { toolPort } from '../../src/testing.js';

describe.each(modeRows())('wording the model can act on (%s)', (mode, skip) => {
  it.skipIf(skip)('a job that ignored INT and still runs says so and names TERM, then KILL; one that ends on INT does not', async () => {
    const oracle = new EofOracle();
    try {
      const runtime = await startRuntime(mode);
      const tools = createTools(runtime, { approve: async () => 'once' });
      await tools.background.call({ command: `${oracle.prefix}trap '' INT; echo up; while :; do sleep 0.1; done`, wait: 10, until: 'up' });
      const answer = await tools.job_kill.call({ id: 0, signal: 'INT', grace: 0.3 });
      expect(answer.isError).toBe(false);
      expect(answer.job?.state).toBe('running');
      expect(oracle.closed).toBe(false); // kernel truth: the job still holds the FIFO
      const lines = answer.text.split('\n');
      const grace = toolPort(runtime).settings.killGraceMs / 1000;
      expect(lines.at(-2)).toBe(`(job 0 ignored SIGINT for 0.3s and still runs; job_kill {"id": 0} sends SIGTERM, then SIGKILL after ${grace}s)`);
      // Before: the plain report of a running job, its output and then "job_kill stops it", as if
      // nothing had been tried.
      expect(answer.text).not.toMatch(/\n> up\njob_status \{"id": 0\} reads more; job_kill \{"id": 0\} stops it\.$/);

      // Negative control: a job that ends on INT is reported killed, with no such line.
      await tools.background.call({ command: `echo up; exec sleep 60`, wait: 10, until: 'up' });
      const ended = await tools.job_kill.call({ id: 1, signal: 'INT' });
      expect(ended.job?.state).toBe('killed');
      expect(ended.text).not.toContain('ignored SIGINT');
      // The next signal stops the first job.
      const stopped = await tools.job_kill.call({ id: 0 });
      expect(stopped.job?.state).toBe('killed');
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('job_kill on a job that had already ended says so, and how it ended; a running one is stopped as before', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    const exited = await tools.background.call({ command: 'echo done; exit 3', wait: 10 });
    expect(exited.job?.state).toBe('exited');
    expect(exited.job?.cleanedUp).toBe(true);
    const answer = await tools.job_kill.call({ id: 0 });
    expect(answer.isError).toBe(false);
    const lines = answer.text.split('\n');
    expect(lines[0]).toMatch(/^job 0 exited 3 /);
    expect(lines.at(-2)).toBe('(job 0 had already ended (exited 3) before this call; nothing was stopped)');

    await tools.background.call({ command: 'echo up; exec sleep 60', wait: 10, until: 'up' });
    await tools.job_kill.call({ id: 1 });
    const again = await tools.job_kill.call({ id: 1 });
    expect(again.text.split('\n').at(-2)).toBe('(job 1 had already ended (killed SIGTERM) before this call; nothing was stopped)');

    // Negative control: stopping a running job says nothing of the kind.
    await tools.background.call({ command: 'echo up; exec sleep 60', wait: 10, until: 'up' });
    const stopped = await tools.job_kill.call({ id: 2 });
    expect(stopped.job?.state).toBe('killed');
    expect(stopped.text).not.toContain('had already ended');
  });

  it.skipIf(skip)('job_input and job_restart errors say what they did not do in their own words', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    await tools.background.call({ command: 'echo up; exec sleep 60', wait: 10, until: 'up' });
    const noStdin = await tools.job_input.call({ id: 0, text: 'y\n' });
    expect(noStdin.isError).toBe(true);
    expect(noStdin.text).toMatch(/^job_input: .*job 0 was started without a stdin pipe.* Nothing was written\.$/);
    expect(noStdin.text).not.toContain('Nothing was read.'); // before: a read's words

    const denying = createTools(runtime, { approve: async () => 'deny' });
    const denied = await denying.job_restart.call({ id: 0 });
    expect(denied.text).toBe('The user denied job_restart(echo up; exec sleep 60); nothing was restarted. Do not repeat this call; ask the user what to do instead.');
    expect(denied.text).not.toContain('nothing was read');
    const deniedInput = await denying.job_input.call({ id: 0, text: 'y\n' });
    expect(deniedInput.text).toContain('nothing was written.');

    const held = createTools(runtime, { approve: async () => 'once', rules: { job_restart: ['port:1'], background: ['port:1'] } });
    await held.background.call({ command: 'echo locked; exec sleep 60', wait: 10, until: 'locked' });
    const selfLocked = await held.job_restart.call({ id: 1 });
    expect(selfLocked.isError).toBe(true);
    expect(selfLocked.text).toContain('Nothing was restarted.');
    expect(selfLocked.text).not.toContain('Nothing was read.');
  });

  it.skipIf(skip)('an id sent as a numeric string is read as that number by every tool', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    await tools.background.call({ command: `cat; echo bye`, stdin: true, wait: 0.2 });
    const status = await tools.job_status.call({ id: '0', lines: '5' });
    expect(status.isError).toBe(false);
    expect(status.job?.id).toBe(0);
    // Before: "id must be a whole number ...; received the string "0"".
    expect(status.text).not.toContain('received the string');
    const input = await tools.job_input.call({ id: '0', text: 'hello\n', close: true });
    expect(input.isError).toBe(false);
    await waitForOutput(runtime, 0, 'bye');
    const restarted = await tools.job_restart.call({ id: '0' });
    expect(restarted.isError).toBe(false);
    expect(restarted.job?.id).toBe(1);
    const killed = await tools.job_kill.call({ id: '1' });
    expect(killed.isError).toBe(false);
    expect(killed.job?.state).toBe('killed');
    // Negative control: text that is not a whole number is still refused.
    const bad = await tools.job_status.call({ id: '0.5' });
    expect(bad.isError).toBe(true);
    expect(bad.text).toBe('job_status: bad input: id must be a whole number from 0 to 9007199254740991; received the string "0.5". Nothing was run.');
  });

  it.skipIf(skip)('a bad input names the field and the rule in one sentence, without repeating the schema', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    await tools.background.call({ command: `exec ${FIXTURES}/ticker.sh`, wait: 0.1 });
    const cases: [keyof typeof tools, unknown, string][] = [
      ['job_status', { id: 0, lines: 'x' }, 'job_status: bad input: lines must be a whole number from 0 to 1000000; received the string "x". Nothing was run.'],
      ['job_kill', {}, 'job_kill: bad input: id is required and missing. Nothing was run.'],
      ['job_kill', { id: 0, force: true }, 'job_kill: bad input: unknown field "force" (the accepted fields are "id", "signal", "grace"). Nothing was run.'],
      ['job_kill', { id: 0, signal: 'HUP' }, 'job_kill: bad input: signal must be one of "INT", "TERM", "KILL"; received the string "HUP". Nothing was run.'],
      ['background', { command: 5 }, 'background: bad input: command must be a string of 1 to 131071 characters; received the number 5. Nothing was run.'],
    ];
    for (const [name, input, expected] of cases) {
      const answer = await (tools[name] as typeof tools.job_status).call(input);
      expect(answer.isError).toBe(true);
      expect(answer.text).toBe(expected);
      // Before: the whole schema and an example, about 100 tokens.
      expect(answer.text).not.toContain('Accepted input:');
      expect(answer.text).not.toContain('For example:');
      expect(answer.text.length).toBeLessThan(200);
    }
    expect(runtime.list()).toHaveLength(1);
  });
});
