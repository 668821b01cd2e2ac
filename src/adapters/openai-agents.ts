/**
 * `heph-jobs/openai-agents`: the tools of createTools as tools of the OpenAI Agents SDK
 * (`@openai/agents`, `tool()`), for `new Agent({ tools })`.
 *
 * - Schemas: createTools' `openai-strict` flavor, sent with `strict: true` (the SDK's default): every
 *   field required, the optional ones nullable (`["integer", "null"]`), a null read as the field
 *   left out. The SDK's own strict conversion of the plain schema would double each description
 *   into an `anyOf`; this one is the text every OpenAI host of createTools sends, and Structured
 *   Outputs hold the model's arguments to it. `strict: false` sends the plain core schema instead.
 * - What the model reads is createTools' text, exactly; the Responses API has no error flag on a
 *   function output, so a refusal (busy lock, unknown job, refused input) is its sentence, returned
 *   as the output. Nothing is thrown at the run. The facts (ToolResult's job, list, stopped,
 *   notices, isError) ride on the output item as the SDK's `customData`, never sent to the model.
 * - Approval of level-2 calls (`approvals`, default `interruptions`): `needsApproval` stops the run
 *   with an interruption for each call whose exact permission pattern (`background(npm run dev)`)
 *   was not answered "always". The host answers each with `answer()` (heph-jobs' once / always /
 *   deny: "always" remembers that exact pattern, for every later run of these tools), with
 *   `askApprover()` (the `approve` option asked for each), or with the SDK's own
 *   `state.approve()` / `state.reject()` (whose `alwaysApprove` approves every call of that tool
 *   in the run, every command: wider than a pattern). The call then runs without asking again. With
 *   `approvals: 'approver'`, `needsApproval` stays false and `approve` is asked inside the call,
 *   as for createTools.
 * - The run's `signal` (`run(agent, input, { signal })`, passed to the tool as `details.signal`) is
 *   the call's `signal`: a wait answers at once with the job as it is; the job runs on.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { tool, type FunctionTool, type RunContext, type RunToolApprovalItem, type UnknownContext } from '@openai/agents';
import * as say from '../wording/index.js';
import { createTools, type ApprovalAnswer, type Approver, type CreateToolsOptions, type ToolDefinition, type ToolResult, type Tools } from '../tools/index.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { callTool, checkMaxWait, contextOf } from './call.js';
import type { ToolRuntime } from '../runtime/tool-port.js';

/** The names of the tools, as the model calls them. */
export type HephToolName = 'background' | 'job_status' | 'job_kill' | 'job_input' | 'job_restart';

/** The JSON Schema of a tool's parameters (an object schema with `additionalProperties: false`). */
export interface HephParameters {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: false;
  description?: string;
}

/** One of the tools as an SDK function tool: its output is createTools' text. */
export type OpenAIJobTool<Context = UnknownContext> = FunctionTool<Context, HephParameters, string>;

/** The facts of an answer, on its output item as `customData` (`RunToolCallOutputItem.customData`). */
export type HephCustomData = Omit<ToolResult, 'text'>;

/** Where a run's interruptions are answered: a RunState (`result.state`). */
export interface ApprovalState {
  approve(item: RunToolApprovalItem): void;
  reject(item: RunToolApprovalItem, options?: { message?: string }): void;
}

export interface OpenAIAgentsToolsOptions extends CreateToolsOptions {
  /**
   * Who is asked before a level-2 call. `interruptions` (default): the SDK's `needsApproval`,
   * answered by the host between runs (`answer`, `askApprover`, or the RunState's own). `approver`:
   * the `approve` option, inside the call, as createTools does; the run is never interrupted.
   */
  approvals?: 'interruptions' | 'approver';
  /** Send createTools' `openai-strict` schemas with `strict: true` (default), or the plain core schemas with `strict: false`. */
  strict?: boolean;
  /**
   * The longest a call's `wait` may run, in ms: a longer one is cut, and the answer says so and
   * names the call that waits on. For a host with a tool timeout of its own. Default: no cap.
   */
  maxWaitMs?: number;
}

export interface OpenAIAgentsTools<Context = UnknownContext> {
  /** For `new Agent({ tools })`, in createTools' order. */
  tools: OpenAIJobTool<Context>[];
  /** The same tools by name. */
  byName: Record<HephToolName, OpenAIJobTool<Context>>;
  /** The tools behind them: `notices()` between turns, `userKill()` for the user's `/job-kill`. */
  hephTools: Tools;
  /** The exact permission pattern an interruption asks about (`background(npm run dev)`); null when it is not one of these tools' or names nothing. */
  patternOf(item: RunToolApprovalItem): string | null;
  /**
   * Answers an interruption of these tools as heph-jobs' approver would: `once` approves the call,
   * `always` approves it and remembers its exact pattern (never asked again), `deny` rejects it and
   * the model reads heph-jobs' denial. False (nothing done) when the item is not one of these tools'.
   */
  answer(state: ApprovalState, item: RunToolApprovalItem, answer: ApprovalAnswer): boolean;
  /**
   * Asks the `approve` option about each interruption of these tools and applies its answers (with
   * no approver, or when it fails, the call is rejected and the model reads why). Resolves with the
   * interruptions that are not these tools', for the host to answer.
   */
  askApprover(state: ApprovalState, interruptions: readonly RunToolApprovalItem[]): Promise<RunToolApprovalItem[]>;
}

/** Facts kept for the output items not yet made; an abandoned call's are dropped past this many. */
const KEPT_FACTS = 256;

/** The tools of `createTools(runtime, options)` as OpenAI Agents SDK function tools. */
export function openAIAgentsTools<Context = UnknownContext>(runtime: JobRuntime | ToolRuntime, options: OpenAIAgentsToolsOptions = {}): OpenAIAgentsTools<Context> {
  const { approvals = 'interruptions', strict = true, maxWaitMs, ...toolOptions } = options;
  if (approvals !== 'interruptions' && approvals !== 'approver') {
    throw new TypeError(say.adapterConfig.badApprovals(approvals));
  }
  if (typeof strict !== 'boolean') throw new TypeError(say.adapterConfig.badStrict(strict));
  checkMaxWait(maxWaitMs);
  const approve: Approver | undefined = toolOptions.approve;
  if (approve !== undefined && typeof approve !== 'function') throw new TypeError(say.toolsConfig.badApprover(approve));
  const byInterruption = approvals === 'interruptions';
  // Patterns answered "always" through answer()/askApprover(): needsApproval says no for them.
  const remembered = new Set<string>();
  // Whether the run approved the call now running (set around each call, read by the gate below).
  const running = new AsyncLocalStorage<{ approvedByRun: boolean }>();
  // A level-2 call runs only when the run approved it or its exact pattern was answered "always".
  const gate: Approver = async (request) => {
    if (remembered.has(request.pattern) || running.getStore()?.approvedByRun === true) return 'once';
    // The run never asked about this call: it named no job when the run checked, or ran outside a run.
    throw new Error(say.adapterConfig.notAskedByRun());
  };
  const hephTools = createTools(runtime, byInterruption ? { ...toolOptions, approve: gate } : toolOptions);
  const schemas = new Map(hephTools.definitions({ flavor: 'openai-strict' }).map((definition) => [definition.function.name, definition.function.parameters]));
  const facts = new Map<string, ToolResult>();

  const toolOf = (definition: ToolDefinition): OpenAIJobTool<Context> => {
    const parameters = (strict ? schemas.get(definition.name) : definition.inputSchema) as HephParameters;
    const asksRun = byInterruption && definition.level === 2;
    return tool({
      name: definition.name,
      description: definition.description,
      parameters,
      // The SDK types a non-strict schema with additionalProperties: true; ours goes out as written.
      strict: strict as true,
      ...(asksRun
        ? {
            needsApproval: async (_context: RunContext, input: unknown) => {
              const pattern = definition.pattern(input);
              return pattern !== null && !remembered.has(pattern);
            },
          }
        : {}),
      execute: async (input: unknown, runContext?: RunContext<Context>, details?: { toolCall?: { callId: string }; signal?: AbortSignal }): Promise<string> => {
        const callId = details?.toolCall?.callId;
        const approvedByRun = asksRun && callId !== undefined && runContext?.isToolApproved({ toolName: definition.name, callId }) === true;
        const result = await running.run({ approvedByRun }, () => callTool(definition, input, contextOf(details?.signal, maxWaitMs)));
        if (callId !== undefined) {
          facts.set(callId, result);
          for (const key of facts.keys()) {
            if (facts.size <= KEPT_FACTS) break;
            facts.delete(key);
          }
        }
        return result.text;
      },
      customDataExtractor: ({ toolCall }: { toolCall: { callId: string } }) => {
        const result = facts.get(toolCall.callId);
        facts.delete(toolCall.callId);
        return result === undefined ? null : customDataOf(result);
      },
    }) as unknown as OpenAIJobTool<Context>;
  };

  const tools = hephTools.all.map(toolOf);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t])) as Record<HephToolName, OpenAIJobTool<Context>>;
  const definitionOf = (item: RunToolApprovalItem): ToolDefinition | undefined => hephTools.all.find((definition) => definition.name === item.name && definition.level === 2);
  const inputOf = (item: RunToolApprovalItem): unknown => {
    try {
      return JSON.parse(item.arguments ?? '{}');
    } catch {
      return undefined;
    }
  };
  const patternOf = (item: RunToolApprovalItem): string | null => definitionOf(item)?.pattern(inputOf(item)) ?? null;

  const apply = (state: ApprovalState, item: RunToolApprovalItem, tool: string, pattern: string, answer: unknown): void => {
    if (answer === 'once' || answer === 'always') {
      if (answer === 'always') remembered.add(pattern);
      state.approve(item);
    } else {
      state.reject(item, { message: answer === 'deny' ? say.denied(tool, pattern) : say.badApproverAnswer(tool, pattern, answer) });
    }
  };

  return {
    tools,
    byName,
    hephTools,
    patternOf,
    answer(state, item, answer) {
      const definition = definitionOf(item);
      if (!definition) return false;
      apply(state, item, definition.name, patternOf(item) ?? `${definition.name}()`, answer);
      return true;
    },
    async askApprover(state, interruptions) {
      const others: RunToolApprovalItem[] = [];
      for (const item of interruptions) {
        const definition = definitionOf(item);
        if (!definition) {
          others.push(item);
          continue;
        }
        const pattern = patternOf(item) ?? `${definition.name}()`;
        if (!approve) {
          state.reject(item, { message: say.noApprover(definition.name, pattern) });
          continue;
        }
        let answer: unknown;
        try {
          answer = await approve({ tool: definition.name, pattern, input: inputOf(item), context: toolOptions.defaults ?? {} });
        } catch (error) {
          state.reject(item, { message: say.approverFailed(definition.name, pattern, error) });
          continue;
        }
        apply(state, item, definition.name, pattern, answer);
      }
      return others;
    },
  };
}

/** An answer's facts as plain JSON data (the SDK keeps customData as JSON). */
export function customDataOf(result: ToolResult): HephCustomData {
  const { text: _text, ...rest } = result;
  return JSON.parse(JSON.stringify(rest)) as HephCustomData;
}
