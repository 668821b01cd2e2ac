/**
 * `heph-jobs/langchain`: the tools of createTools as LangChain tools (`@langchain/core/tools`
 * `tool()`), for `model.bindTools(tools)` and any loop or agent that runs LangChain tools.
 *
 * - `responseFormat: 'content_and_artifact'`: the ToolMessage's content is createTools' text,
 *   exactly; its artifact is the facts (ToolResult's isError, job, list, stopped, notices), for the
 *   host, never sent to a model.
 * - A refusal (busy lock, unknown job, refused input, a denial) is a ToolMessage with
 *   `status: 'error'` (what LangChain's chat models send as a tool error, e.g. Anthropic's
 *   `is_error`), never a throw that ends the loop. Each tool's JSON Schema goes out as createTools
 *   wrote it but lets every input through: LangChain would throw at the loop on input that does not
 *   match, and the tools check it themselves, their refusals naming the field and an example.
 * - Level-2 calls are asked of heph-jobs' approver (`approve`): it sees the exact permission pattern
 *   and remembers "always" per pattern. LangChain's core has no approval step of its own.
 * - The run's `signal` (the RunnableConfig's, as `tool.invoke(call, { signal })`) is the call's
 *   `signal`: a wait answers at once and the job runs on; LangChain rejects the aborted call itself,
 *   as it does for every tool, so the loop ends as the host asked.
 */
import { ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import * as z from 'zod';
import { createTools, type CreateToolsOptions, type ToolDefinition, type ToolResult, type Tools } from '../tools/index.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { callTool, checkMaxWait, contextOf } from './call.js';
import type { ToolRuntime } from '../runtime/tool-port.js';

/** The names of the tools, as the model calls them. */
export type HephToolName = 'background' | 'job_status' | 'job_kill' | 'job_input' | 'job_restart';

/** A ToolMessage's artifact: the facts of the answer whose text is its content. */
export type HephArtifact = Omit<ToolResult, 'text'>;

export interface LangChainToolsOptions extends CreateToolsOptions {
  /**
   * The longest a call's `wait` may run, in ms: a longer one is cut, and the answer says so and
   * names the call that waits on. For a host whose runs end sooner than a wait may ask. Default: no cap.
   */
  maxWaitMs?: number;
}

/** One of the tools as a LangChain tool. */
export type LangChainJobTool = ReturnType<typeof langChainToolOf>;

export interface LangChainTools {
  /** For `model.bindTools(tools)` and the loop that runs them, in createTools' order. */
  tools: LangChainJobTool[];
  /** The same tools by name (to run a model's tool call: `byName[call.name].invoke(call, config)`). */
  byName: Record<HephToolName, LangChainJobTool>;
  /** The tools behind them: `notices()` between turns, `userKill()` for the user's `/job-kill`. */
  hephTools: Tools;
}

/** The tools of `createTools(runtime, options)` as LangChain tools. */
export function langChainTools(runtime: JobRuntime | ToolRuntime, options: LangChainToolsOptions = {}): LangChainTools {
  const { maxWaitMs, ...toolOptions } = options;
  const hephTools = createTools(runtime, toolOptions);
  const cap = maxWaitMs === undefined ? {} : { maxWaitMs };
  const tools = hephTools.all.map((definition) => langChainToolOf(definition, cap));
  return { tools, byName: Object.fromEntries(tools.map((t) => [t.name, t])) as Record<HephToolName, LangChainJobTool>, hephTools };
}

/** A tool definition (createTools' own, or a host's wrapping of one) as a LangChain tool. */
export function langChainToolOf(definition: ToolDefinition, options: Pick<LangChainToolsOptions, 'maxWaitMs'> = {}) {
  const maxWaitMs = checkMaxWait(options.maxWaitMs);
  return tool(
    async (input: unknown, config: { signal?: AbortSignal; toolCall?: { id?: string } } | undefined): Promise<[string | ToolMessage, HephArtifact]> => {
      const result = await callTool(definition, input, contextOf(config?.signal, maxWaitMs));
      const artifact = artifactOf(result);
      const id = config?.toolCall?.id;
      // LangChain marks every tuple's message a success: a refusal is given as the whole message.
      if (result.isError && id !== undefined) {
        return [new ToolMessage({ status: 'error', content: result.text, artifact, tool_call_id: id, name: definition.name }), artifact];
      }
      return [result.text, artifact];
    },
    {
      name: definition.name,
      description: definition.description,
      schema: passThrough(definition.inputSchema),
      responseFormat: 'content_and_artifact',
    },
  );
}

/** An answer's facts, the artifact of its ToolMessage. */
export function artifactOf(result: ToolResult): HephArtifact {
  const { text: _text, ...facts } = result;
  return facts;
}

/** A schema whose JSON Schema is `schema` as written and which accepts every input. */
function passThrough(schema: object) {
  // `$schema: undefined` keeps zod's dialect line out of what the model is shown.
  return z.unknown().meta({ ...(schema as Record<string, unknown>), $schema: undefined });
}
