/**
 * The tools a host gives its model (SPEC 3): `background` (level 2), `job_status` (level 0),
 * `job_kill` (level 2), and the user's `/job-kill ID`.
 *
 * - Level 0 runs without asking; level 2 asks the host's approver (once / always / deny). An
 *   "always" remembers the exact permission pattern, a string with no wildcard: `background(npm
 *   run dev)` approves that command and nothing else; `job_input(sh -i <- "ls\n")` that text to a
 *   job of that command. With no approver, level-2 calls are refused.
 * - Lock rules (host configuration) are expanded per call with `{ref}` and `{worktree}` (the call's
 *   working directory). `background` holds its rules plus its `locks` for the job's lifetime (the
 *   runtime takes them). `job_status` / `job_kill` never take their target's resources: if their
 *   own rules conflict with what the target holds (or still waits for) they fail at once, naming
 *   the way out (`/job-kill ID`); otherwise they hold their own rules for the duration of the call.
 * - `call` never throws for a model's mistake: every refusal or error is a result with `isError`
 *   and a sentence the model can act on (src/wording/); `run` is the same call's text.
 */
import { validateLockRules, type LockRules } from '../locks/index.js';
import * as say from '../wording/index.js';
import type { JsonSchema } from '../facts.js';
import { backgroundTool } from './background.js';
import type { CreateToolsOptions, ToolDefinition, Tools } from './definition.js';
import { definitionsFor } from './flavors.js';
import { jobStatusTool } from './job-status.js';
import { errorAnswer, refusal, type ToolResult } from './result.js';
import { targetedTools } from './targeted.js';
import { Toolkit } from './toolkit.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import type { ToolRuntime } from '../runtime/tool-port.js';
import type { ToolContext } from './context.js';

/** The tools for `runtime` (a JobRuntime, or a host's own ToolRuntime). Throws (at configuration time) if `rules` or `approve` are malformed. */
export function createTools(runtime: JobRuntime | ToolRuntime, options: CreateToolsOptions = {}): Tools {
  if (options === null || typeof options !== 'object') throw new TypeError(say.toolsConfig.notAnObject(options));
  const { approve } = options;
  if (approve !== undefined && typeof approve !== 'function') throw new TypeError(say.toolsConfig.badApprover(approve));
  const rules: LockRules = options.rules === undefined ? {} : validateLockRules(options.rules);
  if (options.reads !== undefined && options.reads !== 'tail' && options.reads !== 'new') throw new TypeError(say.toolsConfig.badReads(options.reads));
  const kit = new Toolkit(runtime, { ...options, rules });
  const { port, notices } = kit;
  const background = backgroundTool(kit);
  const job_status = jobStatusTool(kit);
  const { job_kill, job_input, job_restart } = targetedTools(kit);

  async function userKillCall(raw: number | string): Promise<ToolResult> {
    const id = typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : raw;
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) return refusal(say.notAJobNumber(raw));
    try {
      return kit.jobResult(await port.userKill(id));
    } catch (error) {
      return errorAnswer('/job-kill', error);
    }
  }

  return {
    background,
    job_status,
    job_kill,
    job_input,
    job_restart,
    all: [background, job_status, job_kill, job_input, job_restart],
    definitions: ({ flavor }) => definitionsFor(flavor, [background, job_status, job_kill, job_input, job_restart]),
    userKillCall,
    async userKill(raw) {
      return (await userKillCall(raw)).text;
    },
    async notices() {
      return notices ? (await notices.take()).map((notice) => notice.text) : [];
    },
  };
}

export type { JsonSchema, ToolContext, ToolResult, ToolRuntime };
export type { CreateToolsOptions, ToolDefinition, Tools } from './definition.js';
export { waitingText } from './wait-cap.js';
export type { ApprovalAnswer, ApprovalRequest, Approver } from './approval.js';
export type { BackgroundToolInput, JobKillToolInput, JobStatusToolInput } from './schema.js';
export { Notices, noticeText } from './notices.js';
export type { JobNotice } from './result.js';
