/**
 * The MCP client's stdin, cut into messages (one JSON-RPC message per line) for the server's stdio
 * transport (mcp-stdio.ts). A line is kept only up to the limit (a message held whole past it
 * would let one call take the server's memory); past it, its bytes are dropped as they arrive
 * (only its first and last few KiB are kept, to find the request's id), and when its end arrives
 * the message is reported as refused. Every other line is handed on whole, one `data` event per
 * line.
 */
import { EventEmitter } from 'node:events';

/** Longest message served: the SDK's stdio transport's cap (STDIO_DEFAULT_MAX_BUFFER_SIZE). A
 * job_input of 1 MiB needs at most 6 MiB of JSON. */
export const MAX_MCP_MESSAGE_BYTES = 10 * 1024 * 1024;
/** Bytes kept from each end of a refused message: enough for the envelope around the id. */
const KEPT_BYTES = 4096;
const NEWLINE = 0x0a;

/** A request id as JSON-RPC has them; null when none could be found. */
export type MessageId = string | number | null;

export interface RefusedMessage {
  /** The message's length without its newline. */
  bytes: number;
  /** The request's id, when the message's first or last bytes show it; else null. */
  id: MessageId;
}

// The id as the first member (after "jsonrpc"), as Python's SDK writes it, or as the last one, as
// the TypeScript SDK does ({method, params, jsonrpc, id}). In valid JSON an unescaped `"id"` right
// before the closing brace of the whole text is the top level's: a nested one would be followed by
// more closing brackets. Both patterns run in linear time on at most KEPT_BYTES.
const ID_VALUE = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
const ID_FIRST = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID_VALUE}`);
const ID_LAST = new RegExp(String.raw`[{,]\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

/** The request id of a message from its first and last bytes, or null. */
export function idOfMessage(first: string, last: string): MessageId {
  const match = ID_FIRST.exec(first) ?? ID_LAST.exec(last);
  if (!match) return null;
  try {
    const id: unknown = JSON.parse(match[1]!);
    return typeof id === 'number' || typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

export class MessageLines extends EventEmitter {
  /** The line so far, while it is within the limit. */
  private parts: Buffer[] = [];
  private bytes = 0;
  /** Past the limit: the line's first and last bytes only. */
  private refusing = false;
  private first = Buffer.alloc(0);
  private last = Buffer.alloc(0);

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly onRefused: (message: RefusedMessage) => void,
    private readonly maxBytes = MAX_MCP_MESSAGE_BYTES,
  ) {
    super();
    input.on('data', (chunk: Buffer | string) => this.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk));
    input.on('error', (error: Error) => this.emit('error', error));
  }

  /** The transport stops reading its stdin when it closes. */
  pause(): this {
    this.input.pause();
    return this;
  }

  private push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      this.add(chunk.subarray(start, end === -1 ? chunk.length : end));
      if (end === -1) return;
      this.finish();
      start = end + 1;
    }
  }

  private add(piece: Buffer): void {
    if (piece.length === 0) return;
    this.bytes += piece.length;
    if (!this.refusing && this.bytes <= this.maxBytes) {
      this.parts.push(piece);
      return;
    }
    if (!this.refusing) {
      // Over the limit: keep the start, drop the rest of what was gathered, and read on to the end.
      const gathered = Buffer.concat(this.parts);
      this.first = Buffer.from(gathered.subarray(0, KEPT_BYTES));
      this.last = Buffer.from(gathered.subarray(-KEPT_BYTES));
      this.parts = [];
      this.refusing = true;
    }
    const tail = Buffer.concat([this.last, piece.subarray(-KEPT_BYTES)]);
    this.last = Buffer.from(tail.subarray(-KEPT_BYTES));
  }

  private finish(): void {
    if (this.refusing) {
      this.onRefused({ bytes: this.bytes, id: idOfMessage(this.first.toString('utf8'), this.last.toString('utf8')) });
    } else if (this.bytes > 0) {
      this.emit('data', Buffer.concat([...this.parts, Buffer.of(NEWLINE)]));
    }
    this.parts = [];
    this.bytes = 0;
    this.refusing = false;
    this.first = Buffer.alloc(0);
    this.last = Buffer.alloc(0);
  }
}
