/**
 * `heph-jobs mcp` driven by the MCP SDK's own `Client` over stdio, as any MCP client runs it: the
 * tools as listed (names, descriptions, JSON Schemas exactly as `createTools` defines them), a job
 * started, read and killed, refusals as `isError` results, and the session's end when the client
 * disconnects, checked against kernel truth: the EofOracle FIFO every job process inherits, and
 * /proc holding no process that carries the server's environment marker (server, supervisor, jobs).
 */
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { createTools, JobRuntime } from '../../src/index.js';
import { EofOracle, isReaped, processesWithEnv, see, waitUntil } from '../helpers/kernel.js';
import { connectMcp as connect, textOf } from '../helpers/mcp.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES } from '../helpers/runtime.js';

describe.each(modeRows())('heph-jobs mcp (%s)', (mode, skip) => {
  it.skipIf(skip)('lists every tool of createTools(...).all with its description and JSON Schema as they are', async () => {
    const local = await JobRuntime.start(); // the same defaults as the server's; no supervisor is started
    const expected = createTools(local).all;
    await local.close();
    const { client } = await connect(mode);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expected.map((tool) => tool.name));
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['background', 'job_status', 'job_kill']));
    for (const [i, tool] of tools.entries()) {
      expect(tool.description).toBe(expected[i]!.description);
      expect(tool.inputSchema).toEqual(expected[i]!.inputSchema);
      expect(tool.annotations?.readOnlyHint).toBe(expected[i]!.level === 0);
      // Issue 24, item 1: by default the report text is the whole result, and no output schema is
      // declared (an SDK client refuses a result without structuredContent when one is).
      expect(tool.outputSchema).toBeUndefined();
    }
    expect(client.getServerVersion()).toMatchObject({ name: 'heph-jobs' });
  });

  it.skipIf(skip)('serves instructions that say what the tools are for and when to use them instead of the shell tool (issue 24, item 4)', async () => {
    const { client } = await connect(mode);
    const instructions = client.getInstructions() ?? '';
    const { tools } = await client.listTools();
    // A client that defers the tools (Claude Code's tool search) shows the model their names and this.
    for (const tool of tools) expect(instructions).toContain(tool.name);
    expect(instructions).toMatch(/instead of (?:the|your) shell tool/);
    expect(instructions).toMatch(/dev server/);
    expect(instructions).toMatch(/stopped when (?:this|the) session ends/);
    expect(instructions.length).toBeLessThanOrEqual(600); // two or three lines of a terminal or a prompt
  });

  it.skipIf(skip)('a notify match rides on the next answer, told once (issue 26)', async () => {
    const oracle = new EofOracle();
    try {
      const { client } = await connect(mode);
      // The line is made at run time: the command itself (in every report's header) does not hold it.
      const command = `${oracle.prefix}echo ready; sleep 0.3; f=FAIL; echo "$f src/a.test.ts"; exec sleep 60`;
      const started = await client.callTool({ name: 'background', arguments: { command, until: 'ready', wait: 10, notify: 'FAIL' } });
      expect(textOf(started)).not.toContain('FAIL src');
      // A wait that shows no line: the match is told as a notice, on this answer or the next.
      const waited = await client.callTool({ name: 'job_status', arguments: { id: 0, lines: 0, wait: 10, until: 'FAIL' } });
      const next = await client.callTool({ name: 'job_status', arguments: {} });
      const notice = /line 1 matches "FAIL": FAIL src\/a\.test\.ts\)/g;
      expect([textOf(waited), textOf(next)].join('\n').match(notice)).toHaveLength(1);
      // Told once: a later answer has no notice of it.
      expect(textOf(await client.callTool({ name: 'job_status', arguments: {} }))).not.toMatch(notice);
      await client.callTool({ name: 'job_kill', arguments: { id: 0 } });
      await oracle.waitEof(10_000);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('a field a client adds to every tool (Gemini CLI\'s wait_for_previous) is taken off; a made-up field is still refused (issue 24, item 3)', async () => {
    const oracle = new EofOracle();
    try {
      const { client } = await connect(mode);
      const started = await client.callTool({ name: 'background', arguments: { command: `${oracle.prefix}echo up; exec sleep 60`, until: 'up', wait: 10, wait_for_previous: false } });
      expect(started.isError, textOf(started)).toBeFalsy();
      expect(textOf(started)).toMatch(/^job 0 running .*\n> up\n/);
      const read = await client.callTool({ name: 'job_status', arguments: { id: 0, wait_for_previous: true } });
      expect(read.isError, textOf(read)).toBeFalsy();
      expect(textOf(read)).toMatch(/^job 0 running /);
      // Negative control: a field no client adds is an unknown field, said as before, and nothing runs.
      const madeUp = await client.callTool({ name: 'background', arguments: { command: 'echo never', wait_for_prev: true } });
      expect(madeUp.isError).toBe(true);
      expect(textOf(madeUp)).toMatch(/^background: bad input: unknown field "wait_for_prev" \(the accepted fields are "command", /);
      const list = await client.callTool({ name: 'job_status', arguments: {} });
      expect(textOf(list)).toMatch(/^job 0 running .*\n1 of 8 running$/);
      const killed = await client.callTool({ name: 'job_kill', arguments: { id: 0, wait_for_previous: true } });
      expect(textOf(killed)).toMatch(/^job 0 killed SIGTERM /);
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('starts a job, reads it, kills it; a refusal or a bad input is an isError result', async () => {
    const oracle = new EofOracle();
    try {
      const { client } = await connect(mode);
      const command = `${oracle.prefix}echo hello; exec sleep 60`;
      const started = await client.callTool({ name: 'background', arguments: { command } });
      expect(started.isError).toBeFalsy();
      expect(started.structuredContent).toBeUndefined(); // issue 24, item 1: the text alone
      expect(textOf(started).split('\n')).toEqual([
        expect.stringMatching(/^job 0 running \d+:\d\d exec 9>.*echo hello; exec sleep 60/),
        '> hello',
        'job_status {"id": 0} reads more; job_kill {"id": 0} stops it.',
      ]);
      const read = await client.callTool({ name: 'job_status', arguments: { id: 0 } });
      expect(read.isError).toBeFalsy();
      // The server's tools read with reads: 'new': what background showed is not shown again, and
      // lines: N shows the last N.
      expect(textOf(read)).toMatch(/^job 0 running .*\n\(nothing new: all 1 line of its output was shown before\)\n/);
      const again = await client.callTool({ name: 'job_status', arguments: { id: 0, lines: 1 } });
      expect(textOf(again)).toMatch(/^job 0 running .*\n> hello\n/);
      expect(oracle.closed).toBe(false); // negative control: the job holds the FIFO
      const killed = await client.callTool({ name: 'job_kill', arguments: { id: 0 } });
      expect(killed.isError).toBeFalsy();
      expect(textOf(killed).split('\n')).toEqual([
        expect.stringMatching(/^job 0 killed SIGTERM \d+:\d\d exec 9>.*echo hello; exec sleep 60$/),
        '(nothing new: all 1 line of its output was shown before)',
        'job 0 has ended; its output stays readable with job_status {"id": 0}.',
      ]);
      await oracle.waitEof();

      const list = await client.callTool({ name: 'job_status', arguments: {} });
      expect(list.isError).toBeFalsy();
      expect(textOf(list)).toMatch(/^job 0 killed SIGTERM .*\n0 of 8 running$/);
      const missing = await client.callTool({ name: 'job_status', arguments: { id: 7 } });
      expect(missing.isError).toBe(true);
      expect(textOf(missing)).toBe('job_status: there is no job 7. The jobs are 0. job_status {} lists every job.');
      const bad = await client.callTool({ name: 'background', arguments: { command: 5 } });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/^background: bad input: command must be a string/);
      for (const result of [read, killed, list, missing, bad]) expect(result.structuredContent).toBeUndefined();
      await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/there is no tool "no_such_tool"; the tools are background, job_status, job_kill/);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('a message over the size limit is answered with a JSON-RPC error, and the session and its jobs go on (issue 12, item 8)', async () => {
    const oracle = new EofOracle();
    try {
      const connection = await connect(mode);
      const { client } = connection;
      const started = await client.callTool({ name: 'background', arguments: { command: `${oracle.prefix}exec sleep 60`, stdin: true } });
      expect(textOf(started)).toMatch(/^job 0 running /);

      // 11 MiB of text in one message: over the 10 MiB a message may have.
      const huge = 'x'.repeat(11 * 1024 * 1024);
      const refused = client.callTool({ name: 'job_input', arguments: { id: 0, text: huge } }, undefined, { timeout: 20_000 });
      await expect(refused).rejects.toMatchObject({ code: ErrorCode.InvalidRequest, message: expect.stringMatching(/message of 11534\d\d\d bytes is over the limit of 10485760 bytes/) });

      // Still serving, the job still running (it holds the FIFO), nothing written to it.
      const read = await client.callTool({ name: 'job_status', arguments: { id: 0 } });
      expect(read.isError).toBeFalsy();
      expect(textOf(read)).toMatch(/^job 0 running /);
      expect(oracle.closed).toBe(false);
      const killed = await client.callTool({ name: 'job_kill', arguments: { id: 0 } });
      expect(textOf(killed)).toMatch(/^job 0 killed SIGTERM /);
      await oracle.waitEof();
      expect(connection.stderr()).toMatch(/heph-jobs mcp: refused a message of 11534\d\d\d bytes/);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('when the client closes the connection, every job ends (detached grandchildren too) and the server exits', async () => {
    const oracle = new EofOracle();
    try {
      const connection = await connect(mode);
      const { client, transport, mark } = connection;
      const first = await client.callTool({ name: 'background', arguments: { command: `${oracle.prefix}exec ${FIXTURES}/forever.sh` } });
      expect(textOf(first)).toMatch(/^job 0 running /);
      const second = await client.callTool({ name: 'background', arguments: { command: `${oracle.prefix}(setsid sleep 60 &); echo detached; exec sleep 60` } });
      expect(textOf(second)).toMatch(/^job 1 running .*\n> detached\n/);
      await waitUntil(() => processesWithEnv(`HEPH_TEST_MARK=${mark}`).length >= 6, 'the server, its supervisor and the jobs', 10_000, () =>
        processesWithEnv(`HEPH_TEST_MARK=${mark}`),
      );
      // Everything carrying the marker: the server, the supervisor, forever.sh and its sleep, job 1's
      // shell and the sleep it detached with setsid.
      const everyone = processesWithEnv(`HEPH_TEST_MARK=${mark}`).map(see);
      expect(everyone.map((proc) => proc.pid)).toContain(transport.pid);
      expect(oracle.closed).toBe(false); // negative control: while connected, the jobs run

      await client.close(); // ends the server's stdin; the SDK would SIGTERM it after 2 s
      await oracle.waitEof();
      await waitUntil(() => everyone.every(isReaped), 'every process of the session to be gone and reaped', 10_000, () =>
        everyone.filter((proc) => !isReaped(proc)),
      );
      expect(processesWithEnv(`HEPH_TEST_MARK=${mark}`)).toEqual([]);
      expect(connection.stderr()).toMatch(/heph-jobs mcp: the client closed its end \(stdin ended\); stopped 2 jobs\n/);
    } finally {
      oracle.dispose();
    }
  });
});
