/**
 * `heph-jobs mcp` driven by the official SDK client over stdio (StdioClientTransport spawning the
 * built CLI), as an MCP client runs it; every server started here is killed and reaped after each
 * test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, expect } from 'vitest';
import { CLI } from './cli.js';
import { isReaped, see, waitUntil, type SeenProcess } from './kernel.js';
import { signalIfSame } from './signal.js';
import { Waiters } from './waiters.js';

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

/** Starts `heph-jobs mcp --containment MODE ARGS...` with `env` added to this process's, and connects to it. */
export async function connectMcp(mode: string, env: Record<string, string> = {}, args: readonly string[] = []): Promise<McpConnection> {
  const mark = randomUUID();
  const all: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) all[key] = value;
  Object.assign(all, env, { HEPH_TEST_MARK: mark });
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--containment', mode, ...args], env: all, stderr: 'pipe' });
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

/**
 * `heph-jobs mcp` spoken to line by line over its stdio, for the messages the SDK's client never
 * sends (a batch, a wrong version, a malformed field) and for a client that stops reading. Every
 * line of stdout is parsed as JSON; one that is not stays in `unparsed`.
 */
export class RawMcp {
  readonly child: ChildProcess;
  readonly messages: Record<string, unknown>[] = [];
  readonly arrays: unknown[][] = [];
  readonly unparsed: string[] = [];
  stderr = '';
  /** Resolves when stdout has ended (every byte the server wrote has been read). */
  readonly stdoutEnded: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private partial = '';
  private readonly waiters = new Waiters(() => this.transcript());
  private server: SeenProcess | null = null;

  constructor(mode: string, args: readonly string[] = []) {
    this.child = spawn(process.execPath, [CLI, 'mcp', '--containment', mode, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      this.server = see(this.child.pid!);
    } catch {
      this.server = null;
    }
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.read(chunk));
    this.stdoutEnded = new Promise((resolve) => this.child.stdout!.once('end', () => resolve()));
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
      this.changed();
    });
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => this.changed());
    raws.add(this);
  }

  private read(chunk: string): void {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      try {
        const value: unknown = JSON.parse(line);
        if (Array.isArray(value)) this.arrays.push(value);
        else this.messages.push(value as Record<string, unknown>);
      } catch {
        this.unparsed.push(line);
      }
    }
    this.changed();
  }

  private changed(): void {
    this.waiters.changed();
  }

  /** Writes one line: `message` as JSON, or as it is when it is a string. */
  send(message: unknown): void {
    this.child.stdin!.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  }

  /** `initialize` and `notifications/initialized`, as a client opens a session. */
  async initialize(): Promise<void> {
    this.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await this.answer('init');
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** Resolves with `check()`'s first truthy value, re-checked on every line; fails after `ms` showing everything read. */
  until<T>(check: () => T | null | undefined | false, what: string, ms = 10_000): Promise<T> {
    return this.waiters.until(check, what, ms);
  }

  /** The message that answers request `id`. */
  answer(id: string | number, ms?: number): Promise<Record<string, unknown>> {
    return this.until(() => this.messages.find((message) => message.id === id && !('method' in message)), `the answer to request ${JSON.stringify(id)}`, ms);
  }

  pauseReading(): void {
    this.child.stdout!.pause();
  }

  resumeReading(): void {
    this.child.stdout!.resume();
  }

  endInput(): void {
    this.child.stdin!.end();
  }

  transcript(): string {
    return `--- stdout ---\n${[...this.messages, ...this.arrays].map((m) => JSON.stringify(m).slice(0, 300)).join('\n')}\n${this.unparsed.join('\n')}\n--- stderr ---\n${this.stderr}`;
  }

  /** Kills the server (only while its pid still names the process started) and waits until it is reaped. */
  async kill(): Promise<void> {
    if (this.server) signalIfSame(this.server, 'SIGKILL');
    await this.exited;
    if (this.server) await waitUntil(() => isReaped(this.server!), `the MCP server ${this.server.pid} to be reaped`);
    raws.delete(this);
  }
}

const raws = new Set<RawMcp>();

afterEach(async () => {
  await Promise.all([...raws].map((raw) => raw.kill()));
});
