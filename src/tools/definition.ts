/** The shapes of the tools a host gets: one tool, the options of createTools, and all of them. */
import type { LockRules } from '../locks/index.js';
import type { Approver } from './approval.js';
import type { ToolContext } from './context.js';
import type { FlavorDefinitions, SchemaFlavor } from './flavors.js';
import type { ToolResult } from './result.js';
import type { ReadsMode } from './shown-lines.js';

export interface ToolDefinition {
  name: string;
  /** 0: runs without asking; 2: asks the host's approver. */
  level: 0 | 2;
  /** Written for a model. */
  description: string;
  /**
   * JSON Schema of the input (`additionalProperties: false`): the core every API accepts, no
   * bounds or examples (the tools check those themselves). Per API: `Tools.definitions`.
   */
  inputSchema: object;
  /**
   * The exact permission pattern this call would ask about now; null when it would ask nothing: a
   * level-0 tool, an input that names nothing, a target that has ended, a start past the cap.
   */
  pattern(input: unknown): string | null;
  /** Runs the call; the answer is the report, or a sentence saying why nothing ran. Never throws for bad input. */
  call(input: unknown, context?: ToolContext): Promise<ToolResult>;
  /** `call`'s text alone. */
  run(input: unknown, context?: ToolContext): Promise<string>;
}

export interface CreateToolsOptions {
  /** Asks the user before a level-2 call. Default: none (level-2 calls are refused). */
  approve?: Approver;
  /** Lock rules by tool name (`background`, `job_status`, `job_kill`), e.g. `{ background: ["worktree:{ref}"] }`. Default: none. */
  rules?: LockRules;
  /** Context for calls that give none (or leave a field out). Default: the runtime's cwd and env, no ref. */
  defaults?: ToolContext;
  /**
   * What `job_status {"id"}` (no `lines`, `since` or `filter`) shows. `tail` (default): the last 50
   * lines. `new`: only the lines no earlier answer of these tools showed (`background`'s included),
   * the newest 50 at most, with how many unseen lines it skipped and the `since` call that reads
   * them; with nothing new, one line saying so with the total count. Either way the head lines
   * (the first 20, kept from the start) are shown until these tools have shown them once, and
   * `lines: N` shows the last N and nothing else.
   */
  reads?: ReadsMode;
  /** Every answer ends with a line per job that ended (or started after waiting for its locks)
   * since the model last heard of it (`ToolResult.notices`; `Tools.notices()` between turns). Default: true. */
  notices?: boolean;
}

export interface Tools {
  background: ToolDefinition;
  job_status: ToolDefinition;
  job_kill: ToolDefinition;
  /** Writes to (or closes) a job's stdin; level 2. */
  job_input: ToolDefinition;
  /** Stops a job and starts its command again as a new job; level 2. */
  job_restart: ToolDefinition;
  /** Every tool, in that order. */
  all: ToolDefinition[];
  /**
   * Every tool in the shape `flavor`'s API takes (src/tools/flavors.ts): `anthropic` (`input_schema`),
   * `openai` and `openai-strict` (`{type: "function", function}`; strict: every field required,
   * optional ones nullable; a null is read as the field left out), `gemini` (function declarations,
   * its OpenAPI subset) or `mcp` (`inputSchema`).
   */
  definitions<F extends SchemaFlavor>(options: { flavor: F }): FlavorDefinitions[F][];
  /**
   * `/job-kill ID`: the user's cancellation. No approval, no rules, never waits for a lock. Accepts
   * the id as a number or as the text after `/job-kill`. Resolves with the final report (or why not).
   */
  userKill(id: number | string): Promise<string>;
  /** `userKill` as a result: the final report as `job`, or `isError` with why not. */
  userKillCall(id: number | string): Promise<ToolResult>;
  /**
   * The notice lines due now (jobs that ended, or started after waiting for their locks, since the
   * model last heard of them), consumed: a host puts them into the model's next turn when no tool
   * is called. Empty with `notices: false`. (The user's own `/job-kill` is not hearing: its job's
   * end is still told to the model.)
   */
  notices(): Promise<string[]>;
}
