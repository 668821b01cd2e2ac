/**
 * `heph-jobs/mastra`: the tools of createTools as Mastra tools (`createTool`), and a Mastra
 * sandbox whose processes are heph-jobs jobs (mastra-process-manager.ts), so Mastra's own
 * execute_command, get_process_output and kill_process run contained, cleaned-up processes.
 *
 * - Each tool has createTools' name, description and JSON Schema, given to Mastra as a Standard
 *   Schema that hands the model the JSON Schema as written and lets every input through: the
 *   tools check it themselves, and their refusals name the field and an example.
 * - The tool's output is createTools' ToolResult (the report's facts, for the host); the model
 *   reads its text alone (`toModelOutput`), as an `error-text` result when the call was refused
 *   (busy lock, unknown job, refused input, a denial). Nothing is thrown at the agent's loop.
 * - Level-2 calls are asked of heph-jobs' approver (`approve`), which sees the exact permission
 *   pattern and remembers "always" per pattern; Mastra's `requireApproval` is left unset.
 * - The agent run's `abortSignal` is the call's `signal`: a wait answers at once with the job as
 *   it is, and the job runs on.
 */
import { createTool } from '@mastra/core/tools';
import { createTools, type CreateToolsOptions, type ToolDefinition, type ToolResult, type Tools } from '../tools/index.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { callTool, checkMaxWait, contextOf } from './call.js';
import type { ToolRuntime } from '../runtime/tool-port.js';

export { HephJobsProcessManager, HephJobsSandbox, type HephJobsProcessManagerOptions, type HephJobsSandboxOptions } from './mastra-process-manager.js';

/** The names of the tools, as the model calls them. */
export type HephToolName = 'background' | 'job_status' | 'job_kill' | 'job_input' | 'job_restart';

/** What the model reads of a call: its text, flagged as an error when the call was refused. */
export type ModelOutput = { type: 'text'; value: string } | { type: 'error-text'; value: string };

export interface MastraToolsOptions extends CreateToolsOptions {
  /**
   * The longest a call's `wait` may run, in ms: a longer one is cut, and the answer says so and
   * names the call that waits on. For a host whose runs end sooner than a wait may ask. Default: no cap.
   */
  maxWaitMs?: number;
}

/** One of the tools as a Mastra tool. */
export type MastraJobTool = ReturnType<typeof mastraToolOf>;

export interface MastraTools {
  /** For `new Agent({ tools })` (or spread into the agent's own tools). */
  tools: Record<HephToolName, MastraJobTool>;
  /** The tools behind them: `notices()` between turns, `userKill()` for the user's `/job-kill`. */
  hephTools: Tools;
}

/** The tools of `createTools(runtime, options)` as Mastra tools, by name. */
export function mastraTools(runtime: JobRuntime | ToolRuntime, options: MastraToolsOptions = {}): MastraTools {
  const { maxWaitMs, ...toolOptions } = options;
  const hephTools = createTools(runtime, toolOptions);
  const cap = maxWaitMs === undefined ? {} : { maxWaitMs };
  const [background, job_status, job_kill, job_input, job_restart] = hephTools.all.map((definition) => mastraToolOf(definition, cap));
  return { tools: { background: background!, job_status: job_status!, job_kill: job_kill!, job_input: job_input!, job_restart: job_restart! }, hephTools };
}

/** A tool definition (createTools' own, or a host's wrapping of one) as a Mastra tool. */
export function mastraToolOf(definition: ToolDefinition, options: Pick<MastraToolsOptions, 'maxWaitMs'> = {}) {
  const maxWaitMs = checkMaxWait(options.maxWaitMs);
  return createTool({
    id: definition.name,
    description: definition.description,
    inputSchema: passThrough(definition.inputSchema as Record<string, unknown>),
    mcp: { annotations: definition.level === 0 ? { readOnlyHint: true, openWorldHint: false } : { readOnlyHint: false, openWorldHint: true } },
    execute: async (input: unknown, context: { abortSignal?: AbortSignal } | undefined): Promise<ToolResult> => {
      return callTool(definition, input, contextOf(context?.abortSignal, maxWaitMs));
    },
    // Mastra types the output of a tool without an output schema as unknown: it is execute's ToolResult.
    toModelOutput: (output: unknown): ModelOutput => modelOutput(output as ToolResult),
  });
}

/** A ToolResult as the model reads it. */
export function modelOutput(result: ToolResult): ModelOutput {
  return result.isError ? { type: 'error-text', value: result.text } : { type: 'text', value: result.text };
}

/** A Standard Schema (validation and JSON Schema) that shows `schema` as it is and accepts every input. */
function passThrough(schema: Record<string, unknown>) {
  return {
    '~standard': {
      version: 1 as const,
      vendor: 'heph-jobs',
      validate: (value: unknown) => ({ value }),
      jsonSchema: { input: () => schema, output: () => schema },
    },
  };
}
