/**
 * `heph-jobs/ai`: the tools of createTools as Vercel AI SDK tools (`ai` 7: `tool()` with a
 * `jsonSchema()`), for `generateText` / `streamText` / `ToolLoopAgent`, and a SandboxSession whose
 * processes are heph-jobs jobs (ai-sandbox.ts).
 *
 * - Each tool has createTools' name, description and JSON Schema, unvalidated by the SDK: the
 *   tools check their input themselves, and their refusals name the field and an example.
 *   `strict: true` sends createTools' `openai-strict` schemas (a null is read as left out).
 * - The tool's output is createTools' ToolResult (the report's facts, for the host and its UI);
 *   the model reads its text alone (`toModelOutput`), as an `error-text` output when the call was
 *   refused (busy lock, unknown job, refused input). Nothing is thrown at the loop.
 * - `abortSignal` is the call's `signal`: a wait answers at once with the job as it is, and the job
 *   runs on. A `background` whose job waits for its locks yields that waiting report first, as a
 *   preliminary result (the SDK's streamed tool output), then its answer.
 * - Approval of level-2 calls, through the SDK's own mechanism:
 *   - without `approve`, the tools carry `needsApproval` (deprecated in ai 7 for `toolApproval`,
 *     but it travels with the tools: a host that wires nothing is still asked). The SDK stops the
 *     loop with a `tool-approval-request` for each call whose exact permission pattern
 *     (`background(npm run dev)`) was not answered "always". The host answers with `respond()`
 *     (once / always / deny; "always" remembers that pattern for every later call of these tools),
 *     or with the SDK's own response (`approved: true`: once). A denial reaches the model as
 *     `execution-denied` with heph-jobs' denial sentence.
 *   - `toolApproval`, passed to generateText (it takes precedence over `needsApproval`), does the
 *     same with the pattern as the request's `reason`; with `approve` it asks heph-jobs' approver
 *     there and records its answer as the SDK's automatic approval or denial, without a pause.
 *   - with `approve` and no `toolApproval`, the approver is asked inside the call, as createTools
 *     does. A call is asked about once, whichever way: the call itself runs only when the SDK
 *     approved it (its response is in the call's messages), the approver did, or its pattern was
 *     answered "always"; anything else is refused with a sentence saying nobody was asked.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { jsonSchema, tool, type JSONSchema7, type ModelMessage, type Tool, type ToolApprovalResponse, type ToolApprovalStatus, type ToolExecutionOptions } from 'ai';
import * as say from '../wording/index.js';
import { callTool, checkMaxWait, contextOf } from './call.js';
import { createTools, type ApprovalAnswer, type Approver, type CreateToolsOptions, type ToolContext, type ToolDefinition, type ToolResult, type Tools } from '../tools/index.js';
import type { JobReport } from '../reports/report.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { toolPortOf, type ToolRuntime } from '../runtime/tool-port.js';

export { HephJobsSandboxSession, type HephJobsSandboxOptions, type HephJobsSandboxProcess } from './ai-sandbox.js';

/** The names of the tools, as the model calls them. */
export type HephToolName = 'background' | 'job_status' | 'job_kill' | 'job_input' | 'job_restart';

/** The level-2 tools: each call is approved before it runs. */
export type HephApprovedToolName = 'background' | 'job_kill' | 'job_input' | 'job_restart';

/** What the model reads of a call: its text, flagged as an error when the call was refused. */
export type ModelOutput = { type: 'text'; value: string } | { type: 'error-text'; value: string };

/** The SDK's tool context (`toolsContext`): these tools take none. */
export type NoToolContext = Record<string, unknown>;

/** One of the tools as an AI SDK tool: its output is createTools' ToolResult. */
export type AiJobTool = Tool<unknown, ToolResult, NoToolContext>;

/** A per-tool entry of generateText's `toolApproval`: the approval status of one call. */
export type HephToolApproval = (input: unknown, options: { toolCallId: string }) => Promise<ToolApprovalStatus>;

/** An approval request as `generateText`'s result content holds it (`tool-approval-request`). */
export interface ApprovalRequestPart {
  approvalId: string;
  toolCall: { toolName: string; input: unknown };
}

export interface AiToolsOptions extends CreateToolsOptions {
  /** Send createTools' `openai-strict` schemas with `strict: true` (every field required, the optional ones nullable). Default: false, the core schemas. */
  strict?: boolean;
  /**
   * The longest a call's `wait` may run, in ms: a longer one is cut, and the answer says so and
   * names the call that waits on. For a host with a tool timeout of its own. Default: no cap.
   */
  maxWaitMs?: number;
}

export interface AiTools {
  /** For `generateText({ tools })` (or spread into the host's own ToolSet). */
  tools: Record<HephToolName, AiJobTool>;
  /** For `generateText({ toolApproval })` (or spread into the host's own per-tool map). */
  toolApproval: Record<HephApprovedToolName, HephToolApproval>;
  /** The exact permission pattern a request asks about (`background(npm run dev)`); null when it is not these tools' or names nothing. */
  patternOf(request: ApprovalRequestPart): string | null;
  /**
   * The response to a request of these tools, for the next call's messages (`{ role: 'tool',
   * content: [response] }`): `once` approves the call, `always` approves it and remembers its
   * exact pattern, `deny` denies it with heph-jobs' denial sentence. Null when the request is not
   * these tools' (or names nothing).
   */
  respond(request: ApprovalRequestPart, answer: ApprovalAnswer): ToolApprovalResponse | null;
  /** The tools behind them: `notices()` between turns, `userKill()` for the user's `/job-kill`. */
  hephTools: Tools;
}

/** A call the SDK is running: what tells the approval gate whether the SDK approved it. */
interface RunningCall {
  toolCallId: string;
  messages: readonly ModelMessage[];
}

/** Calls approved by `toolApproval` and not run yet; an abandoned call's are dropped past this many. */
const KEPT_APPROVALS = 256;

/** The tools of `createTools(runtime, options)` as AI SDK tools, with their approval configuration. */
export function aiTools(runtime: JobRuntime | ToolRuntime, options: AiToolsOptions = {}): AiTools {
  const { strict = false, maxWaitMs: cap, ...toolOptions } = options;
  const maxWaitMs = checkMaxWait(cap);
  if (typeof strict !== 'boolean') throw new TypeError(say.adapterConfig.badStrict(strict));
  const approve: Approver | undefined = toolOptions.approve;
  // Patterns answered "always" (by the approver or through respond()): never asked again.
  const remembered = new Set<string>();
  // Calls toolApproval approved with the approver's answer: the call does not ask a second time.
  const approvedCalls = new Set<string>();
  const running = new AsyncLocalStorage<RunningCall>();

  if (approve !== undefined && typeof approve !== 'function') throw new TypeError(say.toolsConfig.badApprover(approve));
  const gate: Approver = async (request) => {
    if (remembered.has(request.pattern)) return 'once';
    const call = running.getStore();
    if (call !== undefined && (approvedCalls.has(call.toolCallId) || approvedInMessages(call.messages, call.toolCallId))) return 'once';
    if (approve === undefined) {
      // Told in heph-jobs' "asking the user ... failed" sentence.
      throw new Error(say.adapterConfig.notAskedBySdk());
    }
    const answer = await approve(request);
    if (answer === 'always') remembered.add(request.pattern);
    return answer;
  };
  // The gate stands in for `approve` (createTools asks it only about level-2 calls).
  const hephTools = createTools(runtime, { ...toolOptions, approve: gate });
  const strictSchemas = new Map(hephTools.definitions({ flavor: 'openai-strict' }).map((definition) => [definition.function.name, definition.function.parameters]));
  const byName = new Map(hephTools.all.map((definition) => [definition.name, definition]));

  /** The context an approver is shown before the call runs: the defaults, as createTools resolves them. */
  const approvalContext = (): ToolContext => {
    const { settings } = toolPortOf(runtime);
    const defaults = toolOptions.defaults ?? {};
    return { cwd: defaults.cwd ?? settings.cwd, env: defaults.env ?? settings.env, ...(defaults.ref === undefined ? {} : { ref: defaults.ref }) };
  };

  const approvalOf =
    (definition: ToolDefinition): HephToolApproval =>
    async (input, { toolCallId }) => {
      const pattern = definition.pattern(input);
      // A call that names nothing (bad input, no such job) is refused by the tool without asking.
      if (pattern === null) return 'not-applicable';
      if (remembered.has(pattern)) return { type: 'approved', reason: `"always" was answered for ${pattern}` };
      if (approve === undefined) return { type: 'user-approval', reason: pattern };
      let answer: unknown;
      try {
        answer = await approve({ tool: definition.name, pattern, input, context: approvalContext() });
      } catch (error) {
        return { type: 'denied', reason: say.approverFailed(definition.name, pattern, error) };
      }
      if (answer === 'once' || answer === 'always') {
        if (answer === 'always') remembered.add(pattern);
        keep(approvedCalls, toolCallId);
        return { type: 'approved', reason: answer };
      }
      if (answer === 'deny') return { type: 'denied', reason: say.denied(definition.name, pattern) };
      return { type: 'denied', reason: say.badApproverAnswer(definition.name, pattern, answer) };
    };

  const toolOf = (definition: ToolDefinition): AiJobTool => {
    const schema = (strict ? strictSchemas.get(definition.name) : definition.inputSchema) as JSONSchema7;
    const needsApproval =
      definition.level === 2 && approve === undefined
        ? (input: unknown) => {
            const pattern = definition.pattern(input);
            return pattern !== null && !remembered.has(pattern);
          }
        : undefined;
    const context = (options: ToolExecutionOptions<NoToolContext>): ToolContext => contextOf(options.abortSignal, maxWaitMs);
    const call = (input: unknown, options: ToolExecutionOptions<NoToolContext>, callContext: ToolContext): Promise<ToolResult> =>
      running.run({ toolCallId: options.toolCallId, messages: options.messages }, () => callTool(definition, input, callContext)).finally(() => approvedCalls.delete(options.toolCallId));
    const execute =
      definition.name === 'background'
        ? async function* (input: unknown, options: ToolExecutionOptions<NoToolContext>): AsyncGenerator<ToolResult> {
            // The job's waiting report (told once, while the call waits for its locks) goes first.
            let told: JobReport | null = null;
            let tell = () => {};
            const waiting = new Promise<void>((resolve) => (tell = resolve));
            const done = call(input, options, {
              ...context(options),
              onWaiting: (job) => {
                told = job;
                tell();
              },
            });
            if ((await Promise.race([done.then(() => false), waiting.then(() => true)])) && told !== null) {
              const job: JobReport = told;
              yield { text: job.text, isError: false, job };
            }
            yield await done;
          }
        : async (input: unknown, options: ToolExecutionOptions<NoToolContext>): Promise<ToolResult> => call(input, options, context(options));
    return tool<unknown, ToolResult, NoToolContext>({
      description: definition.description,
      inputSchema: jsonSchema<unknown>(schema),
      ...(strict ? { strict: true } : {}),
      ...(needsApproval ? { needsApproval } : {}),
      execute,
      toModelOutput: ({ output }: { output: ToolResult }): ModelOutput => modelOutput(output),
    });
  };

  const definition = (name: HephToolName): ToolDefinition => byName.get(name)!;
  const tools: Record<HephToolName, AiJobTool> = {
    background: toolOf(definition('background')),
    job_status: toolOf(definition('job_status')),
    job_kill: toolOf(definition('job_kill')),
    job_input: toolOf(definition('job_input')),
    job_restart: toolOf(definition('job_restart')),
  };
  const toolApproval: Record<HephApprovedToolName, HephToolApproval> = {
    background: approvalOf(definition('background')),
    job_kill: approvalOf(definition('job_kill')),
    job_input: approvalOf(definition('job_input')),
    job_restart: approvalOf(definition('job_restart')),
  };

  const patternOf = (request: ApprovalRequestPart): string | null => {
    const found = byName.get(request.toolCall.toolName);
    return found && found.level === 2 ? found.pattern(request.toolCall.input) : null;
  };

  return {
    tools,
    toolApproval,
    patternOf,
    respond(request, answer) {
      const pattern = patternOf(request);
      if (pattern === null) return null;
      if (answer !== 'once' && answer !== 'always' && answer !== 'deny') throw new TypeError(say.adapterConfig.badAnswer(answer));
      if (answer === 'always') remembered.add(pattern);
      if (answer === 'deny') return { type: 'tool-approval-response', approvalId: request.approvalId, approved: false, reason: say.denied(request.toolCall.toolName, pattern) };
      return { type: 'tool-approval-response', approvalId: request.approvalId, approved: true, reason: answer };
    },
    hephTools,
  };
}

/** A ToolResult as the model reads it. */
export function modelOutput(result: ToolResult): ModelOutput {
  return result.isError ? { type: 'error-text', value: result.text } : { type: 'text', value: result.text };
}

/** Whether `messages` hold the SDK's approval of call `toolCallId` (a continuation after the user approved it). */
function approvedInMessages(messages: readonly ModelMessage[], toolCallId: string): boolean {
  const asked = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const part of message.content) if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId) asked.add(part.approvalId);
  }
  if (asked.size === 0) return false;
  return messages.some((message) => message.role === 'tool' && message.content.some((part) => part.type === 'tool-approval-response' && part.approved && asked.has(part.approvalId)));
}

/** Adds `id`, dropping the oldest past KEPT_APPROVALS (a call approved and never run). */
function keep(set: Set<string>, id: string): void {
  set.add(id);
  if (set.size > KEPT_APPROVALS) set.delete(set.values().next().value!);
}
