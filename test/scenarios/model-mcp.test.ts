/**
 * Issue 13, item 8 and issue 24, item 2, through `heph-jobs mcp` and the official SDK client (its
 * default options unless a case says otherwise): a call that would outlive its client's timeout (a
 * `wait` may ask for 600 s) is cut below it and says so and how to go on, and sends progress
 * notifications while it waits when the request carries a progress token. The cap is
 * lowered for the test with HEPH_JOBS_MCP_WAIT_CAP_MS or --wait-cap (progress comes every third of
 * it). With --structured, results carry `structuredContent` that validates against each tool's
 * `outputSchema`. And the scenarios a model meets: a dev server ready (by its line, or silent, by
 * its port) that crashes after 2 s.
 */
import { Ajv } from 'ajv';
import { ErrorCode, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectMcp, textOf } from '../helpers/mcp.js';
import { modeRows } from '../helpers/modes.js';
import { freePort } from '../helpers/net.js';

const CAP = { HEPH_JOBS_MCP_WAIT_CAP_MS: '1500' };

describe.each(modeRows())('the model through heph-jobs mcp (%s)', (mode, skip) => {
  it.skipIf(skip)('without a progress token, a wait past the cap is cut below the client timeout, and the answer says how to wait on', async () => {
    const { client } = await connectMcp(mode, CAP);
    await client.callTool({ name: 'background', arguments: { command: 'echo up; exec sleep 60', wait: 10, until: 'up' } });
    const started = Date.now();
    const answer = await client.callTool({ name: 'job_status', arguments: { id: 0, wait: 5, until: 'never printed' } });
    expect(Date.now() - started).toBeLessThan(4_500);
    expect(answer.isError).toBeFalsy();
    const lines = textOf(answer).split('\n');
    expect(lines.at(-3)).toMatch(/^\(waited 1\.\ds: no new line matched \/never printed\/ and the job is still running\)$/);
    expect(lines.at(-2)).toMatch(
      /^\(the wait was cut at 1\.5s of the 5s asked, so that the call answers before its client gives up; job_status \{"id": 0, "wait": 3\.5, "until": "never printed"\} waits on\)$/,
    );
    // Before: the whole wait ran (and with a real 60 s client timeout past 60 s, the call failed).
    expect(textOf(answer)).not.toMatch(/\(waited 5\.\ds/);
    expect(answer.structuredContent).toBeUndefined(); // the report text alone (issue 24, item 1)

    // A wait that ends before the cap is not cut, and says nothing of it.
    const short = await client.callTool({ name: 'job_status', arguments: { id: 0, wait: 0.2 } });
    expect(textOf(short)).not.toContain('the wait was cut');
    // background's wait is cut too.
    const bg = await client.callTool({ name: 'background', arguments: { command: 'exec sleep 60', wait: 5, until: 'never printed' } });
    expect(textOf(bg).split('\n').at(-2)).toMatch(/^\(the wait was cut at 1\.5s of the 5s asked, .*; job_status \{"id": 1, "wait": 3\.5, "until": "never printed"\} waits on\)$/);
  });

  it.skipIf(skip)('with a progress token the wait is cut at the cap too, and progress notifications go out while it waits (issue 24, item 2)', async () => {
    // The cap set by the flag this time (the same knob as HEPH_JOBS_MCP_WAIT_CAP_MS).
    const { client } = await connectMcp(mode, {}, ['--wait-cap', '1500']);
    await client.callTool({ name: 'background', arguments: { command: 'echo up; exec sleep 60', wait: 10, until: 'up' } });
    const progress: Progress[] = [];
    const started = Date.now();
    const answer = await client.callTool({ name: 'job_status', arguments: { id: 0, wait: 5 } }, undefined, {
      timeout: 1_000,
      resetTimeoutOnProgress: true,
      onprogress: (update) => progress.push(update),
    });
    expect(Date.now() - started).toBeLessThan(4_500);
    const lines = textOf(answer).split('\n');
    expect(lines.at(-3)).toMatch(/^\(waited 1\.\ds: the job is still running\)$/);
    expect(lines.at(-2)).toMatch(/^\(the wait was cut at 1\.5s of the 5s asked, so that the call answers before its client gives up; job_status \{"id": 0, "wait": 3\.5\} waits on\)$/);
    // Before: a call with a token waited the whole 5 s (a client that does not restart its timeout
    // on progress, as none of Claude Code, Codex and Gemini CLI does, gave up first).
    expect(textOf(answer)).not.toMatch(/\(waited 5\.\ds/);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
    expect(progress[0]!.message).toMatch(/^job_status \{"id": 0\}: waiting/);

    // Negative control: the same call whose client does not reset its timeout on progress times out.
    const timedOut = client.callTool({ name: 'job_status', arguments: { id: 0, wait: 3 } }, undefined, { timeout: 1_000, onprogress: () => undefined });
    await expect(timedOut).rejects.toMatchObject({ code: ErrorCode.RequestTimeout });
    // The server serves on.
    expect(textOf(await client.callTool({ name: 'job_status', arguments: { id: 0 } }))).toMatch(/^job 0 running /);
  });

  it.skipIf(skip)('with --structured, every result carries structuredContent that validates against its tool\'s outputSchema (a valid JSON Schema)', async () => {
    const { client } = await connectMcp(mode, {}, ['--structured']);
    const { tools } = await client.listTools();
    const ajv = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true });
    const validators = new Map(tools.map((tool) => [tool.name, ajv.compile(tool.outputSchema ?? {})]));
    expect([...validators.keys()]).toEqual(['background', 'job_status', 'job_kill', 'job_input', 'job_restart']);
    for (const tool of tools) expect(tool.outputSchema).toMatchObject({ type: 'object', required: ['text'] });

    const calls: [string, Record<string, unknown>][] = [
      ['background', { command: 'cat; echo bye', stdin: true, wait: 0.2 }],
      ['job_status', { id: 0 }],
      ['job_status', {}],
      ['job_input', { id: 0, text: 'hi\n', close: true }],
      ['job_restart', { id: 0 }],
      ['job_kill', { id: 1 }],
      ['job_kill', { id: 7 }],
      ['background', { command: 5 }],
    ];
    for (const [name, args] of calls) {
      const result = await client.callTool({ name, arguments: args }); // the SDK client validates too
      const structured = result.structuredContent as Record<string, unknown>;
      const validate = validators.get(name)!;
      expect(validate(structured), `${name} ${JSON.stringify(args)}: ${ajv.errorsText(validate.errors)}`).toBe(true);
      expect(structured.text).toBe(textOf(result));
      if (!result.isError && name !== 'job_status') expect(structured.job).toMatchObject({ id: expect.any(Number), state: expect.any(String) });
    }
    const restarted = await client.callTool({ name: 'job_status', arguments: {} });
    expect(restarted.structuredContent).toMatchObject({ list: { jobs: [{ id: 0 }, { id: 1, state: 'killed' }], running: 0, maxJobs: 8 } });
    // Negative control: what does not match the schema is refused by the same validator.
    const status = validators.get('job_status')!;
    expect(status({ text: 5 })).toBe(false);
    expect(status({ text: 'x', job: { id: 'zero' } })).toBe(false);
    expect(status({ job: { id: 0 } })).toBe(false);
  });

  it.skipIf(skip)('a dev server ready by its line, then a crash after 2 s; a silent one ready by its port (with --structured, its facts)', async () => {
    const { client } = await connectMcp(mode, {}, ['--structured']);
    const port = await freePort();
    const server =
      `exec node -e 'require("net").createServer().listen(${port}, () => console.log("ready on :${port}")); ` +
      `setTimeout(() => { throw new Error("boom") }, 2000)'`;
    const ready = await client.callTool({ name: 'background', arguments: { command: server, until: 'ready', wait: 30 } });
    expect(ready.isError).toBeFalsy();
    expect(textOf(ready)).toMatch(new RegExp(`^job 0 running .*\\n> ready on :${port}\\n\\(after \\d+\\.\\ds a line matched /ready/: "ready on :${port}"\\)\\n`));
    expect(ready.structuredContent).toMatchObject({ job: { id: 0, state: 'running', waited: { kind: 'matched', line: `ready on :${port}` } } });

    const crashed = await client.callTool({ name: 'job_status', arguments: { id: 0, wait: 30 } });
    const text = textOf(crashed);
    expect(text).toMatch(/^job 0 exited 1 /);
    expect(text).toContain('\n! Error: boom\n');
    expect(text).toMatch(/\n\(after \d+\.\ds the job ended\)\n/);
    expect(text.split('\n').at(-1)).toBe('job 0 has ended; its output stays readable with job_status {"id": 0}.');
    expect(crashed.structuredContent).toMatchObject({ job: { id: 0, state: 'exited', exitCode: 1, waited: { kind: 'ended' } } });

    const silentPort = await freePort();
    const silent = await client.callTool({
      name: 'background',
      arguments: { command: `sleep 0.5; exec node -e 'require("net").createServer().listen(${silentPort})'`, until_port: silentPort, wait: 30 },
    });
    expect(textOf(silent)).toMatch(new RegExp(`\\n\\(no output yet\\)\\n\\(after \\d+\\.\\ds the job listens on port ${silentPort}\\)\\n`));
    expect(silent.structuredContent).toMatchObject({ job: { id: 1, state: 'running', waited: { kind: 'listening', port: silentPort }, stats: { ports: [silentPort] } } });
  });
});
