/**
 * `heph-jobs mcp` driven by the official SDK client over stdio (StdioClientTransport spawning the
 * built CLI), as an MCP client runs it; every server started here is killed and reaped after each
 * test.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, expect } from 'vitest';
import { CLI } from './cli.js';
import { isReaped, see, waitUntil, type SeenProcess } from './kernel.js';
import { signalIfSame } from './signal.js';

export interface McpConnection {
  client: Client;
  transport: StdioClientTransport;
  /** The server process as seen once it was connected (it surely ran then): what the cleanup kills. */
  server: SeenProcess | null;
  /** The server's environment carries HEPH_TEST_MARK=<mark>, and so does every job it starts. */
  mark: string;
  stderr: () => string;
}

const open: McpConnection[] = [];

afterEach(async () => {
  for (const connection of open.splice(0)) {
    // Only while its pid still names the server seen at connect time: it may have ended by now.
    const { server } = connection;
    if (server) signalIfSame(server, 'SIGKILL');
    await connection.client.close().catch(() => undefined);
    if (server) await waitUntil(() => isReaped(server), `the MCP server ${server.pid} to be reaped`);
  }
});

function seen(pid: number): SeenProcess | null {
  try {
    return see(pid);
  } catch {
    return null;
  }
}

/** Starts `heph-jobs mcp --containment MODE` with `env` added to this process's, and connects to it. */
export async function connectMcp(mode: string, env: Record<string, string> = {}): Promise<McpConnection> {
  const mark = randomUUID();
  const all: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) all[key] = value;
  Object.assign(all, env, { HEPH_TEST_MARK: mark });
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--containment', mode], env: all, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'heph-jobs-test', version: '1.0.0' });
  const connection: McpConnection = { client, transport, server: null, mark, stderr: () => stderr };
  open.push(connection);
  await client.connect(transport);
  connection.server = transport.pid === null ? null : seen(transport.pid);
  return connection;
}

/** The one text block of a tool result. */
export function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  const content = result.content as { type: string; text?: string }[];
  expect(content).toHaveLength(1);
  expect(content[0]!.type).toBe('text');
  return content[0]!.text!;
}
