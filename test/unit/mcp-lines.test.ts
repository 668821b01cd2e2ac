/**
 * The MCP server's stdin cut into messages (src/cli/mcp-lines.ts): whole lines reach the SDK one
 * per event however the bytes arrive; a line over the limit is refused when its end arrives,
 * with its request id when its first or last bytes show it, and the lines after it are served.
 * (The server itself, with the SDK's client: test/integration/mcp.test.ts.)
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { idOfMessage, MessageLines, type RefusedMessage } from '../../src/cli/mcp-lines.js';

function gate(maxBytes: number) {
  const input = new PassThrough();
  const refused: RefusedMessage[] = [];
  const lines = new MessageLines(input, (message) => refused.push(message), maxBytes);
  const served: string[] = [];
  lines.on('data', (line: Buffer) => served.push(line.toString()));
  /** Writes `text` in chunks of `size` bytes, each its own data event. */
  const feed = (text: string, size: number) => {
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += size) input.write(bytes.subarray(at, at + size));
  };
  return { input, refused, served, feed };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('MessageLines', () => {
  it('hands on each line whole, with its newline, however the chunks fall; skips empty lines', async () => {
    for (const size of [1, 3, 7, 1000]) {
      const { served, refused, feed } = gate(100);
      feed('{"id":1}\n\n{"id":2,"x":"é"}\r\n{"id":3}\n{"unfinished"', size);
      await flush();
      expect(served).toEqual(['{"id":1}\n', '{"id":2,"x":"é"}\r\n', '{"id":3}\n']);
      expect(refused).toEqual([]);
    }
  });

  it('serves a line of exactly the limit; refuses one byte more when its end arrives, and serves the next', async () => {
    const { served, refused, feed } = gate(100);
    const at = `{"jsonrpc":"2.0","id":1,"x":"${'a'.repeat(100 - 31)}"}`;
    expect(Buffer.byteLength(at)).toBe(100);
    const over = `{"method":"tools/call","params":{"x":"${'b'.repeat(5000)}"},"jsonrpc":"2.0","id":"call-2"}`;
    feed(`${at}\n${over}`, 64);
    await flush();
    expect(served).toEqual([`${at}\n`]);
    expect(refused).toEqual([]); // not before its end
    feed('\n{"id":3}\n', 64);
    await flush();
    expect(refused).toEqual([{ bytes: Buffer.byteLength(over), id: 'call-2' }]);
    expect(served).toEqual([`${at}\n`, '{"id":3}\n']);
  });

  it('finds the id first (Python SDK) or last (TypeScript SDK), never a nested one', () => {
    expect(idOfMessage('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a', '')).toBe(7);
    expect(idOfMessage('{ "id" : "x\\"y", "jsonrpc": "2.0"', '')).toBe('x"y');
    expect(idOfMessage('{"method":"tools/call","params":{"', 'bbbb"},"jsonrpc":"2.0","id":42}')).toBe(42);
    expect(idOfMessage('{"method":"tools/call","params":{"', 'bbbb"},"jsonrpc":"2.0","id":-3}\r')).toBe(-3);
    // Negative controls: an id inside params, or inside a string, is not the request's.
    expect(idOfMessage('{"method":"x","params":{"', 'b","id":5}}')).toBeNull();
    expect(idOfMessage('{"method":"x","params":{"', 'b\\",\\"id\\":5}"}')).toBeNull();
    expect(idOfMessage('{"method":"notifications/x","params":{"', 'b"}}')).toBeNull();
  });
});
