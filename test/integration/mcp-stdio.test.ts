/**
 * `heph-jobs mcp` spoken to line by line over stdio (issue 28, item 11), for what the SDK's client
 * never sends: every message a server cannot serve gets its JSON-RPC error reply, with the id when
 * the message shows one, at once (a client would otherwise wait out its timeout), and the session
 * serves on; and a client that stops reading, then closes stdin, still gets every answer it was due.
 * The protocol is the same in both containment modes; it runs in process-group mode.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EofOracle, waitUntil } from '../helpers/kernel.js';
import { RawMcp } from '../helpers/mcp.js';

const MODE = 'process-group';

function errorOf(message: Record<string, unknown>): { code: number; message: string } {
  expect(message, JSON.stringify(message)).toHaveProperty('error');
  return message.error as { code: number; message: string };
}

describe('heph-jobs mcp over raw stdio', () => {
  it('answers a batch, a wrong jsonrpc version, string params, non-object arguments and a line that is not JSON with their JSON-RPC errors', async () => {
    const raw = new RawMcp(MODE);
    await raw.initialize();

    // A batch: MCP has none (since 2025-06-18); each request in it is answered with an error.
    raw.send([
      { jsonrpc: '2.0', id: 11, method: 'tools/list' },
      { jsonrpc: '2.0', id: 12, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
    ]);
    const batch = await raw.until(() => raw.arrays[0], 'the answer to the batch');
    expect(batch).toHaveLength(2);
    expect(batch.map((reply) => (reply as { id: unknown }).id)).toEqual([11, 12]);
    for (const reply of batch as Record<string, unknown>[]) {
      expect(reply.jsonrpc).toBe('2.0');
      expect(errorOf(reply)).toEqual({ code: -32600, message: expect.stringMatching(/^a batch of messages is not served: .*send each message on its own line/) });
    }

    raw.send({ jsonrpc: '1.0', id: 13, method: 'tools/list' });
    expect(errorOf(await raw.answer(13))).toEqual({ code: -32600, message: expect.stringMatching(/^"jsonrpc" must be "2\.0"; received a string, "1\.0"$/) });

    raw.send({ jsonrpc: '2.0', id: 14, method: 'tools/call', params: 'job_status' });
    expect(errorOf(await raw.answer(14))).toEqual({ code: -32600, message: expect.stringMatching(/^"params" must be an object .*; received a string, "job_status"$/) });

    for (const [id, args, received] of [
      [15, '{"id": 0}', 'a string, "\\{\\\\"id'],
      [16, [0], 'an array, \\[0\\]'],
      [17, 7, 'a number, 7'],
    ] as const) {
      raw.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'job_status', arguments: args } });
      const error = errorOf(await raw.answer(id));
      expect(error.code).toBe(-32602);
      expect(error.message).toMatch(new RegExp(`^tools/call: "arguments" must be an object of the tool's fields, such as \\{"id": 0\\}; received ${received}`));
      expect(error.message).not.toMatch(/"code":|invalid_type|\n/); // a sentence, not a schema dump
    }

    raw.send('{"jsonrpc": "2.0", "id": 18, "method": "tools/list"');
    const parseError = await raw.until(() => raw.messages.find((message) => message.id === null), 'the answer to a line that is not JSON');
    expect(errorOf(parseError)).toEqual({ code: -32700, message: expect.stringMatching(/^the line is not JSON \(.*\); send one JSON-RPC 2\.0 message per line$/) });

    // Negative control: a well-formed request is served, after all of the above.
    raw.send({ jsonrpc: '2.0', id: 19, method: 'tools/call', params: { name: 'job_status', arguments: {} } });
    const served = await raw.answer(19);
    expect(served).not.toHaveProperty('error');
    expect(served.result).toMatchObject({ content: [{ type: 'text', text: expect.stringMatching(/^no jobs yet/) }] });
    expect(raw.unparsed).toEqual([]);
  });

  it('a client that stops reading, then closes stdin, still gets every answer due before the server exits', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-mcp-'));
    const oracle = new EofOracle();
    try {
      const raw = new RawMcp(MODE);
      await raw.initialize();
      raw.pauseReading();
      // Far more than a pipe holds: the answers wait in the server until the client reads again.
      const lists = Array.from({ length: 60 }, (_, i) => 100 + i);
      for (const id of lists) raw.send({ jsonrpc: '2.0', id, method: 'tools/list' });
      const marker = path.join(dir, 'started');
      raw.send({ jsonrpc: '2.0', id: 200, method: 'tools/call', params: { name: 'background', arguments: { command: `${oracle.prefix}touch ${marker}; exec sleep 60` } } });
      // The job has started, so every tools/list before it was answered (into the server's queue).
      await waitUntil(() => fs.existsSync(marker), 'the job to start', 10_000, () => raw.transcript());
      raw.endInput();
      await oracle.waitEof(); // the session ended: its job is gone
      await raw.until(() => /stdin ended\); stopped 1 job/.test(raw.stderr), 'the server to end its session');

      raw.resumeReading();
      await raw.stdoutEnded;
      const answered = new Set(raw.messages.map((message) => message.id));
      expect(lists.filter((id) => !answered.has(id)), raw.transcript()).toEqual([]);
      expect(answered.has(200)).toBe(true);
      expect(await raw.exited).toEqual({ code: 0, signal: null });
    } finally {
      oracle.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('requests written with the end of input right after them (a pipe into the server) are all answered', async () => {
    const raw = new RawMcp(MODE);
    raw.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    raw.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    raw.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'background', arguments: { command: 'echo hi; exec sleep 60', until: 'hi', wait: 10 } } });
    raw.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'job_status', arguments: {} } });
    raw.endInput();
    await raw.stdoutEnded;
    for (const id of [1, 2, 3, 4]) expect(raw.messages.find((message) => message.id === id), `${id}\n${raw.transcript()}`).toBeDefined();
    expect(await raw.exited).toEqual({ code: 0, signal: null });
  });

  it('a request the client cancelled is not waited for when the session ends (the SDK never answers it)', async () => {
    const raw = new RawMcp(MODE);
    await raw.initialize();
    raw.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'background', arguments: { command: 'exec sleep 60' } } });
    await raw.answer(2);
    raw.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'job_status', arguments: { id: 0, wait: 30 } } });
    raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3, reason: 'the user pressed Esc' } });
    const ended = Date.now();
    raw.endInput();
    expect(await raw.exited).toEqual({ code: 0, signal: null });
    expect(raw.stderr).not.toMatch(/still unanswered/);
    expect(Date.now() - ended).toBeLessThan(8_000); // the end waits up to 10 s for a request it thinks is due
  });
});
