/**
 * One line of the MCP client's stdin read as a JSON-RPC message, or the error reply it gets
 * instead. The SDK's stdio transport drops what it cannot parse (a batch, `"jsonrpc": "1.0"`,
 * string `params`) without a word, so the client waits out its timeout, and answers a malformed
 * `tools/call` with -32603 and its schema's dump: here each gets the JSON-RPC error that names it
 * (-32700, -32600, or -32602 for tools/call's params), with the request's id when it shows one.
 */
import { CallToolRequestSchema, ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { MessageId } from './mcp-lines.js';
import { protocolError as say } from './mcp-wording.js';

export interface ErrorReply {
  jsonrpc: '2.0';
  id: MessageId;
  error: { code: number; message: string };
}

/** The message to serve, or the reply that answers the line instead (none for a batch of notifications only). */
export type MessageRead = { message: JSONRPCMessage } | { reply: ErrorReply | ErrorReply[] | null };

export function errorReply(id: MessageId, code: number, message: string): ErrorReply {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The id a reply carries: the message's own when it is a valid one, else null (JSON-RPC 2.0, section 5). */
function replyId(value: unknown): MessageId {
  const id = isObject(value) ? value.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** The first problem of a zod result, as `where: problem`. */
function firstIssue(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): [string, string] {
  const issue = error.issues[0];
  return [issue && issue.path.length > 0 ? issue.path.map(String).join('.') : 'the message', issue?.message ?? 'not accepted'];
}

/** What is wrong with one message, as its error reply; null when it can be served. */
function problemOf(value: unknown): ErrorReply | null {
  const id = replyId(value);
  if (!isObject(value)) return errorReply(null, ErrorCode.InvalidRequest, say.notAnObject(value));
  if (value.jsonrpc !== '2.0') return errorReply(id, ErrorCode.InvalidRequest, say.version(value.jsonrpc));
  if ('id' in value && id === null) return errorReply(null, ErrorCode.InvalidRequest, say.id(value.id));
  if ('method' in value) {
    if (typeof value.method !== 'string') return errorReply(id, ErrorCode.InvalidRequest, say.method(value.method));
    if ('params' in value && !isObject(value.params)) return errorReply(id, ErrorCode.InvalidRequest, say.params(value.params));
    if (value.method === 'tools/call' && id !== null) {
      const params = value.params as Record<string, unknown> | undefined;
      if (typeof params?.name !== 'string') return errorReply(id, ErrorCode.InvalidParams, say.toolName(params?.name));
      if ('arguments' in params && !isObject(params.arguments)) return errorReply(id, ErrorCode.InvalidParams, say.toolArguments(params.arguments));
      const call = CallToolRequestSchema.safeParse(value);
      if (!call.success) return errorReply(id, ErrorCode.InvalidParams, say.toolCall(...firstIssue(call.error)));
    }
  } else if (id === null || !('result' in value || 'error' in value)) {
    return errorReply(id, ErrorCode.InvalidRequest, say.kind());
  }
  const parsed = JSONRPCMessageSchema.safeParse(value);
  return parsed.success ? null : errorReply(id, ErrorCode.InvalidRequest, say.shape(...firstIssue(parsed.error)));
}

/** One line (without its newline) read as a message. */
export function readMessage(line: string): MessageRead {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { reply: errorReply(null, ErrorCode.ParseError, say.notJson((error as Error).message)) };
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return { reply: errorReply(null, ErrorCode.InvalidRequest, say.emptyBatch()) };
    // Every request in it gets its refusal; a notification gets none (JSON-RPC 2.0, section 6).
    const replies = value
      .filter((member) => !(isObject(member) && 'method' in member && !('id' in member)))
      .map((member) => errorReply(replyId(member), ErrorCode.InvalidRequest, say.batch()));
    return { reply: replies.length === 0 ? null : replies };
  }
  const problem = problemOf(value);
  return problem === null ? { message: value as JSONRPCMessage } : { reply: problem };
}
