/**
 * Issue 13, item 5: ready by port. `background` and `job_status` take `until_port` with `wait`, and
 * answer as soon as a process of the job listens on that TCP port, so a dev server that prints
 * nothing (or buffers its output) is still reported ready. Kernel truth: a TCP connection to the
 * port succeeds once the answer says it listens; controls: a job that never listens, one that
 * listens on another port, and a port held by a process that is not the job's all time out.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { modeRows } from '../helpers/modes.js';
import { accepts, freePort } from '../helpers/net.js';
import { startRuntime } from '../helpers/runtime.js';

/** A server that prints nothing, listening on `port` after `delay` seconds. */
function silentServer(port: number, delay = 0.5): string {
  return `sleep ${delay}; exec node -e 'require("net").createServer().listen(${port})'`;
}

describe.each(modeRows())('ready by port (%s)', (mode, skip) => {
  it.skipIf(skip)('background {until_port, wait}: a silent server is reported ready, with the port', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    const port = await freePort();
    expect(await accepts(port)).toBe(false); // negative control: nothing listens yet
    const answer = await tools.background.call({ command: silentServer(port), until_port: port, wait: 30 });
    expect(answer.isError).toBe(false);
    expect(answer.job?.state).toBe('running');
    expect(answer.job?.waited).toMatchObject({ kind: 'listening', port });
    expect(await accepts(port)).toBe(true);
    const lines = answer.text.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^job 0 running .* listening :${port}$`));
    expect(lines).toContain('(no output yet)');
    expect(lines.at(-2)).toMatch(new RegExp(`^\\(after \\d+\\.\\ds the job listens on port ${port}\\)$`));
    // Before: the answer came when the wait ran out, saying nothing of the port.
    expect(answer.text).not.toMatch(/\(waited \d+\.\ds: the job is still running\)/);
  });

  it.skipIf(skip)('job_status {id, until_port, wait}: answers once the job listens; at once when it already does', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    const port = await freePort();
    await tools.background.call({ command: silentServer(port, 1) });
    const answer = await tools.job_status.call({ id: 0, until_port: port, wait: 30 });
    expect(answer.job?.waited).toMatchObject({ kind: 'listening', port });
    expect(await accepts(port)).toBe(true);
    const again = await tools.job_status.call({ id: 0, until_port: port, wait: 30 });
    expect(again.job?.waited).toMatchObject({ kind: 'listening', port });
    expect(again.job!.waited!.waitedMs).toBeLessThan(5_000);
    // With a pattern as well, whichever comes first answers.
    const both = await tools.job_status.call({ id: 0, until: 'never printed', until_port: port, wait: 30 });
    expect(both.job?.waited).toMatchObject({ kind: 'listening', port });
  });

  it.skipIf(skip)('a job that never listens on the port times out with a clear line; so does one on another port, or a port the job does not hold', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    const port = await freePort();
    const never = await tools.background.call({ command: 'exec sleep 60', until_port: port, wait: 1 });
    expect(never.job?.waited).toMatchObject({ kind: 'timed-out' });
    expect(never.text.split('\n').at(-2)).toMatch(new RegExp(`^\\(waited \\d+\\.\\ds: the job does not listen on port ${port} and is still running\\)$`));

    // Another port: the job listens (the header says so), just not on the one asked for.
    const other = await freePort();
    await tools.background.call({ command: silentServer(other, 0), until_port: other, wait: 30 });
    expect(await accepts(other)).toBe(true);
    const wrong = await tools.job_status.call({ id: 1, until_port: port, wait: 1 });
    expect(wrong.job?.waited).toMatchObject({ kind: 'timed-out' });
    expect(wrong.text.split('\n')[0]).toMatch(new RegExp(`listening :${other}$`));

    // The port is listened on, but by this test process, not by any process of the job.
    const foreign = net.createServer();
    await new Promise<void>((resolve) => foreign.listen(port, resolve));
    try {
      expect(await accepts(port)).toBe(true);
      const notOurs = await tools.job_status.call({ id: 0, until_port: port, wait: 1 });
      expect(notOurs.job?.waited).toMatchObject({ kind: 'timed-out' });
    } finally {
      await new Promise<void>((resolve) => foreign.close(() => resolve()));
    }
  });

  it.skipIf(skip)('a job that ends before it listens answers as ended; a bad port is refused', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    const port = await freePort();
    const ended = await tools.background.call({ command: 'echo no server; exit 2', until_port: port, wait: 30 });
    expect(ended.job?.state).toBe('exited');
    expect(ended.job?.waited).toMatchObject({ kind: 'ended' });
    const bad = await tools.job_status.call({ id: 0, until_port: 70_000, wait: 1 });
    expect(bad.isError).toBe(true);
    expect(bad.text).toBe('job_status: bad input: until_port must be a whole number from 1 to 65535; received the number 70000. Nothing was run.');
  });
});
