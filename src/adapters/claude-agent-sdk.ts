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
 * - Approval of level-2 calls (`approvals`):
 *   - `approver` (default): heph-jobs' `approve`, as for createTools. It sees the exact permission
 *     pattern (`background(npm run dev)`) and remembers "always" per pattern, which Claude Code's
 *     permission rules for MCP tools (by tool name) cannot. So Claude Code is told to allow these
 *     tools (`allowedTools`) and does not ask a second time.
 *   - `canUseTool`: Claude Code's own permission step, answered by the host's `canUseTool` through
 *     the returned `canUseTool(host)`. The level-2 tools are left out of `allowedTools`, so Claude
 *     Code asks before each call; the host is asked with the exact pattern as `title`, and an allow
 *     that carries `updatedPermissions` (the host's "always") is kept for that exact pattern only,
 *     never handed to Claude Code as a rule for the whole tool. A call Claude Code did not ask
 *     about is refused in the tool.
 * - The SDK's cancellation of a call (an `interrupt()`, the query's abort) is the call's `signal`:
 *   a wait answers at once with the job as it is; the job runs on.
 */
import { createSdkMcpServer, tool, type AnyZodRawShape, type CanUseTool, type McpSdkServerConfigWithInstance, type PermissionResult } from '@anthropic-ai/claude-agent-sdk';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import { INSTRUCTIONS } from '../cli/mcp-wording.js';
import { createTools, type Approver, type CreateToolsOptions, type ToolContext, type ToolDefinition, type ToolResult, type Tools } from '../tools/index.js';
import * as say from '../wording/index.js';
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
  /**
   * Who is asked before a level-2 call: `approver` (default), heph-jobs' `approve` in the call; or
   * `canUseTool`, Claude Code's permission step, answered by the host's `canUseTool` wrapped with
   * the returned `canUseTool(host)` (`approve` is then not used, and is refused if given).
   */
  approvals?: 'approver' | 'canUseTool';
}

export interface ClaudeAgentSdkServer {
  /** The server's key in `mcpServers`. */
  name: string;
  /** The in-process server, for `mcpServers: { [name]: server }`. */
  server: McpSdkServerConfigWithInstance;
  /** `{ [name]: server }`, to pass as `mcpServers` or spread into it. */
  mcpServers: Record<string, McpSdkServerConfigWithInstance>;
  /** For `allowedTools`: the tools Claude Code runs without its own prompt (all of them with `approvals: 'approver'`, where `approve` asks; the level-0 one with `canUseTool`). */
  allowedTools: string[];
  /**
   * For `query({ options: { canUseTool } })` with `approvals: 'canUseTool'`: the host's `host`,
   * which these tools' level-2 calls reach with their exact pattern as `title` (a pattern answered
   * "always" is allowed unasked); every other tool's request goes to `host` as it is. With
   * `approvals: 'approver'` it returns `host` itself (these tools are in `allowedTools`).
   */
  canUseTool(host: CanUseTool): CanUseTool;
  /** The tools behind the server: `notices()` between turns, `userKill()` for the user's `/job-kill`. */
  hephTools: Tools;
}

/** The tools of `createTools(runtime, options)` as an in-process server of the Claude Agent SDK. */
export function claudeAgentSdkServer(runtime: JobRuntime | ToolRuntime, options: ClaudeAgentSdkOptions = {}): ClaudeAgentSdkServer {
  const { name = DEFAULT_SERVER_NAME, alwaysLoad, maxWaitMs, approvals = 'approver', ...toolOptions } = options;
  if (approvals !== 'approver' && approvals !== 'canUseTool') throw new TypeError(say.adapterConfig.badClaudeApprovals(approvals));
  if (approvals === 'canUseTool' && toolOptions.approve !== undefined) throw new TypeError(say.adapterConfig.approveWithCanUseTool());
  const permissions = approvals === 'canUseTool' ? claudePermissions() : null;
  const hephTools = createTools(runtime, permissions ? { ...toolOptions, approve: permissions.gate } : toolOptions);
  const server = sdkServerOf(hephTools.all, { name, ...(alwaysLoad === undefined ? {} : { alwaysLoad }), ...(maxWaitMs === undefined ? {} : { maxWaitMs }) });
  const toolName = (definition: ToolDefinition) => `mcp__${name}__${definition.name}`;
  const allowed = hephTools.all.filter((definition) => !permissions || definition.level === 0);
  return {
    name,
    server,
    mcpServers: { [name]: server },
    allowedTools: allowed.map(toolName),
    hephTools,
    canUseTool(host) {
      if (typeof host !== 'function') throw new TypeError(say.adapterConfig.badCanUseTool(host));
      if (!permissions) return host;
      const levelTwo = new Map(hephTools.all.filter((definition) => definition.level === 2).map((definition) => [toolName(definition), definition]));
      return async (requested, input, requestOptions) => {
        const definition = levelTwo.get(requested);
        // Trust is keyed on the server's source where the CLI tells it: a configured server may take our name.
        const ours = definition !== undefined && (requestOptions.mcpServer === undefined || (requestOptions.mcpServer.source === 'sdk' && requestOptions.mcpServer.name === name));
        return ours ? permissions.ask(definition, host, requested, input, requestOptions) : host(requested, input, requestOptions);
      };
    },
  };
}

type Allow = Extract<PermissionResult, { behavior: 'allow' }>;

/**
 * The bridge between Claude Code's permission step and the tools: what the host allowed (each
 * exact pattern, counted, taken by the call it allowed) and what it answered "always".
 */
function claudePermissions() {
  const remembered = new Set<string>();
  const allowed = new Map<string, number>();
  const take = (pattern: string): boolean => {
    const count = allowed.get(pattern) ?? 0;
    if (count === 0) return false;
    if (count === 1) allowed.delete(pattern);
    else allowed.set(pattern, count - 1);
    return true;
  };
  const gate: Approver = async (request) => {
    if (take(request.pattern) || remembered.has(request.pattern)) return 'once';
    throw new Error(say.adapterConfig.notAskedByClaude());
  };
  async function ask(definition: ToolDefinition, host: CanUseTool, ...[requested, input, options]: Parameters<CanUseTool>): Promise<PermissionResult | null> {
    const pattern = definition.pattern(input);
    // No pattern: the call asks nothing (it names no job, or its job has ended); the tool answers it.
    if (pattern === null || remembered.has(pattern)) return allow(pattern, input);
    const answer = await host(requested, input, { ...options, title: pattern });
    // null: the host answered Claude Code itself, unseen here; a call it allowed is refused in the tool.
    if (answer === null) return null;
    if (answer.behavior === 'deny') return { ...answer, message: answer.message || say.denied(definition.name, pattern) };
    const { updatedPermissions, updatedInput = input, ...rest } = answer;
    const ranPattern = definition.pattern(updatedInput);
    // The host's "always" holds for this exact pattern, never as Claude Code's rule for the tool.
    if (updatedPermissions !== undefined && ranPattern !== null) remembered.add(ranPattern);
    return allow(ranPattern, updatedInput, rest);
  }
  function allow(pattern: string | null, input: Record<string, unknown>, rest: Partial<Allow> = {}): PermissionResult {
    if (pattern !== null) allowed.set(pattern, (allowed.get(pattern) ?? 0) + 1);
    return { ...rest, behavior: 'allow', updatedInput: input };
  }
  return { gate, ask };
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
