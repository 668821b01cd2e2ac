/**
 * `heph-jobs mcp`: a Model Context Protocol server over stdio exposing every tool of
 * `createTools(runtime).all` with its own JSON Schema and description. It uses the SDK's low-level
 * `Server` (the "advanced use" its docs keep it for): `McpServer` wants zod schemas, and the tools
 * already have JSON Schemas, which go out exactly as defined; a tool added there is served with no
 * change here. Approvals are the MCP client's business: the server runs what it is asked.
 *
 * The session is the connection: when the client disconnects (stdin ends, the transport closes, or
 * a signal arrives) every job is stopped, then the process exits. Nothing the client sends ends it:
 * a message over the size limit is refused with a JSON-RPC error (mcp-lines.ts) and the server
 * serves on. stdout carries nothing but the protocol; the few lines of log go to stderr.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { createTools, waitingText, type ToolDefinition } from '../tools/index.js';
import { MAX_MCP_MESSAGE_BYTES, MessageLines } from './mcp-lines.js';
import { mcpResult, outputSchema } from './mcp-results.js';
import { waitCapFromEnv, withinTimeout, type McpCall } from './mcp-time.js';
import { stoppedText, type Session, type SessionEnd } from './session.js';

export interface McpOptions {
  session: Session;
  /** Longest wait of a call without a progress token, in ms (mcp-time.ts). Default: 50 s, or HEPH_JOBS_MCP_WAIT_CAP_MS. */
  waitCapMs?: number;
  input: NodeJS.ReadableStream & { isPaused?(): boolean };
  output: NodeJS.WritableStream;
  log: (line: string) => void;
  version: string;
}

/** The JSON-RPC error's message for a message over the size limit (the session goes on). */
function tooLarge(bytes: number): string {
  return (
    `message of ${bytes} bytes is over the limit of ${MAX_MCP_MESSAGE_BYTES} bytes, so nothing in it was run; the session goes on. ` +
    'Send less in one call (job_input can write a long text in several calls).'
  );
}

const INSTRUCTIONS =
  'Background jobs that belong to this session: background starts a long-running shell command (a dev server, ' +
  'a watcher) and answers with a job number; job_status reads its output; job_kill stops it and everything it ' +
  'started. Every job is stopped when this connection closes.';

/** The MCP form of a tool: its name, description and JSON Schema as they are. */
export function mcpTool(tool: ToolDefinition): Tool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    outputSchema: outputSchema(tool.name),
    annotations: tool.level === 0 ? { readOnlyHint: true, openWorldHint: false } : { readOnlyHint: false, openWorldHint: true },
  };
}

/** Serves until the client disconnects; resolves with how the session ended. */
export async function serveMcp(options: McpOptions): Promise<SessionEnd> {
  const { session, log } = options;
  // reads: 'new': a client's model keeps every answer in its context, so a read shows only what no
  // answer showed before (lines: N still shows the last N).
  const tools = createTools(session.runtime, { approve: async () => 'once', reads: 'new' });
  const waitCapMs = options.waitCapMs ?? waitCapFromEnv(process.env);
  const server = new Server({ name: 'heph-jobs', version: options.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.all.map(mcpTool) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    const tool = tools.all.find((candidate) => candidate.name === name);
    if (!tool) {
      throw new McpError(ErrorCode.InvalidParams, `there is no tool ${JSON.stringify(name)}; the tools are ${tools.all.map((t) => t.name).join(', ')}`);
    }
    try {
      const call: McpCall = {
        progressToken: request.params._meta?.progressToken,
        signal: extra.signal,
        progress: (progressToken, progress, elapsedMs) =>
          extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message: waitingText(tool.name, args?.id, elapsedMs) } }),
      };
      return mcpResult(await withinTimeout(call, waitCapMs, (context) => tool.call(args ?? {}, context)));
    } catch (error) {
      // The tools answer every mistake with text; a throw is a fault, still told as a tool result.
      return { content: [{ type: 'text', text: `${tool.name} failed unexpectedly: ${(error as Error).message}` }], isError: true };
    }
  });

  // The SDK's transport reads whole messages from MessageLines, never more than one at a time, so
  // its own cap (one message and its newline) is never reached; a larger message is refused here.
  let transport: StdioServerTransport | null = null;
  const lines = new MessageLines(options.input, ({ bytes, id }) => {
    log(`heph-jobs mcp: refused a message of ${bytes} bytes (over the limit of ${MAX_MCP_MESSAGE_BYTES})`);
    const error = { code: ErrorCode.InvalidRequest, message: tooLarge(bytes) };
    transport?.send({ jsonrpc: '2.0', id, error } as never).catch(() => undefined);
  });
  transport = new StdioServerTransport(lines as never, options.output as never, { maxBufferSize: MAX_MCP_MESSAGE_BYTES + 1 });
  let finished: (reason: string) => void = () => undefined;
  const disconnected = new Promise<string>((resolve) => (finished = resolve));
  transport.onerror = (error) => log(`heph-jobs mcp: transport error: ${error.message}`);
  server.onclose = () => finished('the transport closed');
  options.input.once('end', () => finished('the client closed its end (stdin ended)'));
  options.input.once('close', () => finished('stdin closed'));
  options.output.once('error', (error: Error) => finished(`stdout failed (${error.message})`));

  await server.connect(transport);
  log(`heph-jobs mcp ${options.version}: serving ${tools.all.map((tool) => tool.name).join(', ')} over stdio (cwd ${session.runtime.settings.cwd})`);
  const reason = await disconnected;
  const end = await session.end();
  log(`heph-jobs mcp: ${reason}; ${stoppedText(end.stopped)}`);
  await server.close().catch(() => undefined);
  return end;
}
