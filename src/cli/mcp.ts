/**
 * `heph-jobs mcp`: a Model Context Protocol server over stdio exposing every tool of
 * `createTools(runtime).all` with its own JSON Schema and description. It uses the SDK's low-level
 * `Server` (the "advanced use" its docs keep it for): `McpServer` wants zod schemas, and the tools
 * already have JSON Schemas, which go out exactly as defined; a tool added there is served with no
 * change here. Approvals are the MCP client's business: the server runs what it is asked.
 *
 * The session is the connection: when the client disconnects (stdin ends, the transport closes, or
 * a signal arrives) the calls under way stop waiting and are answered, every job is stopped, every
 * answer is written, then the process exits. Nothing the client sends ends it: a message that
 * cannot be served is answered with a JSON-RPC error (mcp-stdio.ts) and the server serves on.
 * stdout carries nothing but the protocol; the few lines of log go to stderr.
 */
import type { Writable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { createTools, waitingText, type ToolDefinition } from '../tools/index.js';
import { withoutClientFields } from './mcp-client-fields.js';
import { mcpResult, outputSchema } from './mcp-results.js';
import { McpStdio } from './mcp-stdio.js';
import { waitCaps, withinTimeout, type McpCall } from './mcp-time.js';
import { INSTRUCTIONS } from './mcp-wording.js';
import { stoppedText, type Session, type SessionEnd } from './session.js';
import { toolPortOf } from '../runtime/tool-port.js';

export interface McpOptions {
  session: Session;
  /** Longest wait of every call, in ms (mcp-time.ts). Default: 240 s with a progress token, 50 s without. */
  waitCapMs?: number;
  /** Results carry `structuredContent` and tools declare their `outputSchema` (mcp-results.ts). Default: false. */
  structured?: boolean;
  input: NodeJS.ReadableStream;
  output: Writable;
  log: (line: string) => void;
  version: string;
}

/** How long a session's end waits for the calls under way (their waits stopped) to be answered. */
const ANSWER_DEADLINE_MS = 10_000;
/** How long the answers may wait for a client that stopped reading before the process exits anyway. */
const FLUSH_DEADLINE_MS = 30_000;

/** The MCP form of a tool: its name, description and JSON Schema as they are (and its output schema when `structured`). */
export function mcpTool(tool: ToolDefinition, structured = false): Tool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema as Tool['inputSchema'],
    ...(structured ? { outputSchema: outputSchema(tool.name) } : {}),
    annotations: tool.level === 0 ? { readOnlyHint: true, openWorldHint: false } : { readOnlyHint: false, openWorldHint: true },
  };
}

/** Serves until the client disconnects; resolves with how the session ended. */
export async function serveMcp(options: McpOptions): Promise<SessionEnd> {
  const { session, log } = options;
  const structured = options.structured === true;
  // reads: 'new': a client's model keeps every answer in its context, so a read shows only what no
  // answer showed before (lines: N still shows the last N).
  const tools = createTools(session.runtime, { approve: async () => 'once', reads: 'new' });
  const caps = waitCaps(options.waitCapMs);
  const ending = new AbortController();
  const server = new Server({ name: 'heph-jobs', version: options.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools.all.map((tool) => mcpTool(tool, structured)) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    const tool = tools.all.find((candidate) => candidate.name === name);
    if (!tool) {
      throw new McpError(ErrorCode.InvalidParams, `there is no tool ${JSON.stringify(name)}; the tools are ${tools.all.map((t) => t.name).join(', ')}`);
    }
    const declared = (tool.inputSchema as { properties?: Record<string, unknown> }).properties ?? {};
    const args = withoutClientFields(request.params.arguments ?? {}, declared);
    try {
      const call: McpCall = {
        progressToken: request.params._meta?.progressToken,
        signal: AbortSignal.any([extra.signal, ending.signal]),
        progress: (progressToken, progress, elapsedMs) =>
          extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, message: waitingText(tool.name, args.id, elapsedMs) } }),
      };
      return mcpResult(await withinTimeout(call, caps, (context) => tool.call(args, context)), structured);
    } catch (error) {
      // The tools answer every mistake with text; a throw is a fault, still told as a tool result.
      return { content: [{ type: 'text', text: `${tool.name} failed unexpectedly: ${(error as Error).message}` }], isError: true };
    }
  });

  const transport = new McpStdio(options.input, options.output, log);
  let finished: (reason: string) => void = () => undefined;
  const disconnected = new Promise<string>((resolve) => (finished = resolve));
  transport.onerror = (error) => log(`heph-jobs mcp: transport error: ${error.message}`);
  server.onclose = () => finished('the transport closed');
  options.input.once('end', () => finished('the client closed its end (stdin ended)'));
  options.input.once('close', () => finished('stdin closed'));
  options.output.once('error', (error: Error) => finished(`stdout failed (${error.message})`));

  await server.connect(transport);
  log(`heph-jobs mcp ${options.version}: serving ${tools.all.map((tool) => tool.name).join(', ')} over stdio (cwd ${toolPortOf(session.runtime).settings.cwd})`);
  const reason = await disconnected;
  // What was asked before the end is answered (a wait answers with the job as it is), then written.
  ending.abort();
  if (!(await transport.answered(ANSWER_DEADLINE_MS))) log(`heph-jobs mcp: some calls were still unanswered ${ANSWER_DEADLINE_MS / 1000}s after the end`);
  const end = await session.end();
  log(`heph-jobs mcp: ${reason}; ${stoppedText(end.stopped)}`);
  if (!(await transport.flushed(FLUSH_DEADLINE_MS))) {
    log(`heph-jobs mcp: gave up writing ${transport.unwritten} bytes of answers the client did not read within ${FLUSH_DEADLINE_MS / 1000}s`);
  }
  await server.close().catch(() => undefined);
  return end;
}
