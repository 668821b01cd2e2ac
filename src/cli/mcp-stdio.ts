/**
 * The MCP server's stdio transport (the SDK's `Transport`): messages in from the client's stdin,
 * one per line (mcp-lines.ts cuts them, mcp-messages.ts reads them and answers what cannot be
 * served), and out to stdout. It knows which requests are still unanswered and how much output is
 * still unwritten, so that a session that ends answers what it was asked and writes every answer
 * before the process exits: a client that stopped reading gets them when it reads again.
 */
import type { Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { MAX_MCP_MESSAGE_BYTES, MessageLines, type MessageId } from './mcp-lines.js';
import { errorReply, readMessage, type ErrorReply } from './mcp-messages.js';
import { protocolError } from './mcp-wording.js';

function cancelledId(params: unknown): MessageId {
  const id = (params as { requestId?: unknown } | undefined)?.requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

export class McpStdio implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Requests handed to the server and not answered yet. */
  private readonly unanswered = new Set<MessageId>();
  private readonly changes = new Set<() => void>();
  private lines: MessageLines | null = null;
  private failed = false;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: Writable,
    private readonly log: (line: string) => void,
  ) {
    output.on('error', () => {
      this.failed = true;
      this.changed();
    });
  }

  async start(): Promise<void> {
    this.lines = new MessageLines(this.input, ({ bytes, id }) => {
      this.log(`heph-jobs mcp: refused a message of ${bytes} bytes (over the limit of ${MAX_MCP_MESSAGE_BYTES})`);
      this.write(errorReply(id, ErrorCode.InvalidRequest, protocolError.tooLarge(bytes, MAX_MCP_MESSAGE_BYTES)));
    });
    this.lines.on('data', (line: Buffer) => this.receive(line.toString('utf8').replace(/\r?\n$/, '')));
    this.lines.on('error', (error: Error) => this.onerror?.(error));
  }

  private receive(line: string): void {
    const read = readMessage(line);
    if ('reply' in read) {
      if (read.reply !== null) this.write(read.reply);
      return;
    }
    const { message } = read;
    if ('method' in message && 'id' in message) this.unanswered.add(message.id);
    // The SDK never answers a request the client cancelled.
    if ('method' in message && message.method === 'notifications/cancelled' && this.unanswered.delete(cancelledId(message.params))) this.changed();
    this.onmessage?.(message);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!('method' in message) && this.unanswered.delete((message as { id?: MessageId }).id ?? null)) this.changed();
    this.write(message);
  }

  /** Queued whatever the reader does; `flushed` waits for it to be written. */
  private write(message: JSONRPCMessage | ErrorReply | ErrorReply[]): void {
    if (this.failed) return;
    this.output.write(`${JSON.stringify(message)}\n`, () => this.changed());
  }

  private changed(): void {
    for (const change of [...this.changes]) change();
  }

  private until(done: () => boolean, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        if (!done()) return;
        finish(true);
      };
      const finish = (met: boolean) => {
        clearTimeout(timer);
        this.changes.delete(check);
        resolve(met);
      };
      const timer = setTimeout(() => finish(false), ms);
      this.changes.add(check);
      check();
    });
  }

  /** Resolves true once every request handed on has been answered, false after `ms`. */
  answered(ms: number): Promise<boolean> {
    return this.until(() => this.unanswered.size === 0, ms);
  }

  /** Bytes written but not yet taken by the reader. */
  get unwritten(): number {
    return this.failed ? 0 : this.output.writableLength;
  }

  /** Resolves true once everything written has reached the pipe (or stdout failed), false after `ms`. */
  flushed(ms: number): Promise<boolean> {
    return this.until(() => this.unwritten === 0, ms);
  }

  async close(): Promise<void> {
    this.lines?.removeAllListeners('data');
    this.lines?.pause();
    this.onclose?.();
  }
}
