/**
 * `heph-jobs/claude-agent-sdk`: the tools of createTools as an in-process MCP server of the Claude
 * Agent SDK (`tool()` + `createSdkMcpServer`), for `query({ options: { mcpServers } })`.
 *
 * - What the model reads is the report text as createTools wrote it, one text block, with
 *   `isError` on a refusal (busy lock, unknown job, refused input, a denial): no structured
 *   duplicate, since Claude Code shows a model the JSON of `structuredContent` instead of the text.
 * - Each tool's JSON Schema goes out as createTools defines it: the SDK takes zod, so every schema
 *   is a zod object that accepts any input and carries the JSON Schema as its metadata. The input
 *   is checked by the tools themselves, whose refusals name the field and an example.
 * - Approval of level-2 calls is heph-jobs' approver (`approve`, as for createTools): it sees the
 *   exact permission pattern (`background(npm run dev)`) and remembers "always" per pattern,
 *   which Claude Code's permission rules for MCP tools (by tool name) cannot. So Claude Code is
 *   told to allow these tools (`allowedTools`) and does not ask a second time.
 * - The SDK's cancellation of a call (an `interrupt()`, the query's abort) is the call's `signal`:
 *   a wait answers at once with the job as it is; the job runs on.
 */
import { createSdkMcpServer, tool, type AnyZodRawShape, type McpSdkServerConfigWithInstance } from '@anthropic-ai/claude-agent-sdk';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { INSTRUCTIONS } from '../cli/mcp-wording.js';
import { createTools, type CreateToolsOptions, type ToolContext, type ToolDefinition, type ToolResult, type Tools } from '../tools/index.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { callTool, checkMaxWait, contextOf } from './call.js';
import type { ToolRuntime } from '../runtime/tool-port.js';

/** The server's name when none is given: the tools are `mcp__heph-jobs__background` and so on. */
export const DEFAULT_SERVER_NAME = 'heph-jobs';

export interface ClaudeAgentSdkOptions extends CreateToolsOptions {
  /** The key of the server in `mcpServers`, which names the tools `mcp__<name>__<tool>`. Default: `heph-jobs`. */
  name?: string;
  /**
   * Offer the tools' schemas in every request instead of behind Claude Code's tool search. The
   * five schemas are small, and a deferred tool costs the model a search first. Default: true.
   */
  alwaysLoad?: boolean;
  /**
   * The longest a call's `wait` may run, in ms: a longer one is cut, and the answer says so and
   * names the call that waits on. For a host that sets a per-call timeout of its own (the SDK's
   * default for an in-process server has none to speak of). Default: no cap.
   */
  maxWaitMs?: number;
}

export interface ClaudeAgentSdkServer {
  /** The server's key in `mcpServers`. */
  name: string;
  /** The in-process server, for `mcpServers: { [name]: server }`. */
  server: McpSdkServerConfigWithInstance;
  /** `{ [name]: server }`, to pass as `mcpServers` or spread into it. */
  mcpServers: Record<string, McpSdkServerConfigWithInstance>;
  /** For `allowedTools`: Claude Code runs these tools without its own prompt (level-2 calls are asked through `approve`). */
  allowedTools: string[];
  /** The tools behind the server: `notices()` between turns, `userKill()` for the user's `/job-kill`. */
  hephTools: Tools;
}

/** The tools of `createTools(runtime, options)` as an in-process server of the Claude Agent SDK. */
export function claudeAgentSdkServer(runtime: JobRuntime | ToolRuntime, options: ClaudeAgentSdkOptions = {}): ClaudeAgentSdkServer {
  const { name = DEFAULT_SERVER_NAME, alwaysLoad, maxWaitMs, ...toolOptions } = options;
  const hephTools = createTools(runtime, toolOptions);
  const server = sdkServerOf(hephTools.all, { name, ...(alwaysLoad === undefined ? {} : { alwaysLoad }), ...(maxWaitMs === undefined ? {} : { maxWaitMs }) });
  return { name, server, mcpServers: { [name]: server }, allowedTools: hephTools.all.map((definition) => `mcp__${name}__${definition.name}`), hephTools };
}

/** Tool definitions (createTools' own, or a host's wrapping of them) as an in-process server. */
export function sdkServerOf(definitions: readonly ToolDefinition[], options: Pick<ClaudeAgentSdkOptions, 'name' | 'alwaysLoad' | 'maxWaitMs'> = {}): McpSdkServerConfigWithInstance {
  const { name = DEFAULT_SERVER_NAME, alwaysLoad = true, maxWaitMs } = options;
  checkMaxWait(maxWaitMs);
  return createSdkMcpServer({
    name,
    instructions: INSTRUCTIONS,
    alwaysLoad,
    tools: definitions.map((definition) =>
      tool(definition.name, definition.description, schemaOf(definition.inputSchema), (args, extra) => answer(definition, args, callContext(extra, maxWaitMs)), {
        annotations: definition.level === 0 ? { readOnlyHint: true, openWorldHint: false } : { readOnlyHint: false, openWorldHint: true },
      }),
    ),
  });
}

/** A tool's answer as the SDK returns it to Claude Code: the text alone, flagged when it is a refusal. */
export function sdkResult(result: ToolResult): CallToolResult {
  return { content: [{ type: 'text', text: result.text }], ...(result.isError ? { isError: true } : {}) };
}

async function answer(definition: ToolDefinition, args: unknown, context: ToolContext): Promise<CallToolResult> {
  return sdkResult(await callTool(definition, args, context));
}

/** The call's context: the SDK's cancellation of the request (its handler's `extra.signal`) and the cap. */
function callContext(extra: unknown, maxWaitMs: number | undefined): ToolContext {
  const signal = extra !== null && typeof extra === 'object' ? (extra as { signal?: unknown }).signal : undefined;
  return contextOf(signal instanceof AbortSignal ? signal : undefined, maxWaitMs);
}

/**
 * A zod object whose JSON Schema is `schema` exactly and which lets any object through. A whole
 * object schema, not the raw shape the SDK's types name (its server takes both): only it keeps
 * `required` and `additionalProperties` as written, and unknown fields for the tools' own check.
 */
function schemaOf(schema: object): AnyZodRawShape {
  const { properties = {}, ...rest } = schema as { properties?: Record<string, object> };
  const shape = Object.fromEntries(Object.entries(properties).map(([key, property]) => [key, z.unknown().optional().meta(property as Record<string, unknown>)]));
  return z.looseObject(shape).meta({ ...rest, $schema: undefined }) as unknown as AnyZodRawShape;
}
