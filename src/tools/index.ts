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
import { JobNotFoundError } from '../protocol/errors.js';
import { capacityError } from '../runtime/job-record.js';
import {
  expandRules,
  normalizeResources,
  overlaps,
  validateLockRules,
  type LockRules,
  type NormalizedResource,
} from '../locks/index.js';
import { buildListReport, type JobReport } from '../reports/report.js';
import type { BackgroundInput, JobRuntime } from '../runtime/job-runtime.js';
import { commandProblem, patternProblem } from '../runtime/input-checks.js';
import { LOCKED_CALL_WAIT_MS } from '../runtime/options.js';
import * as say from '../wording/index.js';
import {
  backgroundSchema,
  jobKillSchema,
  jobStatusSchema,
  jobInputSchema,
  jobRestartSchema,
  type BackgroundToolInput,
  type JobInputToolInput,
  type JobRestartToolInput,
  type JobKillToolInput,
  type JobStatusToolInput,
  type ToolSchema,
} from './schema.js';
import { definitionsFor, type FlavorDefinitions, type SchemaFlavor } from './flavors.js';
import { validate } from './validate.js';
import type { JsonSchema } from '../facts.js';
import { approvalGate, type Approver } from './approval.js';
import { checkContext, contextResolver, unlessAborted, WAITING_TOLD_MS, type ToolContext } from './context.js';
import { errorAnswer, jobResult as reportResult, listResult, refusal, type ToolResult } from './result.js';
import { ShownLines, type ReadAsked, type ReadsMode } from './shown-lines.js';
import { afterCut, capWait } from './wait-cap.js';
import { Notices } from './notices.js';

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
  /** The exact permission pattern of this call; null for a level-0 tool or an input that names nothing. */
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

/** What the tools use of a runtime (a `JobRuntime` is one). Without `onJobEvent`, notices are looked for at every answer. */
export type ToolRuntime = Pick<
  JobRuntime,
  'background' | 'status' | 'list' | 'kill' | 'userKill' | 'input' | 'restart' | 'heldResources' | 'wantedResources' | 'locks' | 'settings'
> &
  Partial<Pick<JobRuntime, 'onJobEvent'>>;

/** The tools for `runtime`. Throws (at configuration time) if `rules` or `approve` are malformed. */
export function createTools(runtime: ToolRuntime, options: CreateToolsOptions = {}): Tools {
  if (options === null || typeof options !== 'object') throw new TypeError(say.toolsConfig.notAnObject(options));
  const { approve } = options;
  if (approve !== undefined && typeof approve !== 'function') throw new TypeError(say.toolsConfig.badApprover(approve));
  const rules: LockRules = options.rules === undefined ? {} : validateLockRules(options.rules);
  const resolve = contextResolver(checkContext('createTools option defaults', options.defaults ?? {}), runtime.settings);
  const ask = approvalGate(approve);
  const notices = options.notices === false ? null : new Notices(runtime);
  /** Every answer of a tool ends with the notices due (see notices.ts). */
  const defineTool = (definition: Omit<ToolDefinition, 'run'>): ToolDefinition =>
    toolFrom({ ...definition, call: async (input, context) => (notices ? notices.finish(await definition.call(input, context)) : definition.call(input, context)) });
  const limits = { maxJobs: runtime.settings.maxJobs, outputLines: runtime.settings.outputLines };
  if (options.reads !== undefined && options.reads !== 'tail' && options.reads !== 'new') throw new TypeError(say.toolsConfig.badReads(options.reads));
  const shown = new ShownLines(options.reads ?? 'tail');

  /** A report as the answer, shown as these tools show reads (src/tools/shown-lines.ts). */
  function jobResult(report: JobReport, asked?: ReadAsked): ToolResult {
    return reportResult(shown.present(report, asked));
  }

  /** The tool's own rules for this call (throws BadLockRuleError / BadResourceError). */
  function ownRules(tool: string, context: ToolContext & { cwd: string }): readonly NormalizedResource[] {
    return expandRules(rules, tool, { ref: context.ref, worktree: context.cwd });
  }

  /**
   * The refusal of `tool` at once if its own rules conflict with what a target holds or, while it
   * waits for its locks, what it waits for (the fair queue would put this call behind it, and it
   * would then hold them until it ends); else null.
   */
  function selfConflict(tool: string, own: readonly NormalizedResource[], targets: readonly { id: number; command: string }[]): ToolResult | null {
    if (own.length === 0) return null;
    for (const target of targets) {
      const { resources, waiting } = claimsOf(target.id);
      const found = resources.length === 0 ? [] : overlaps(own, resources);
      if (found.length > 0) return refusal(say.selfDeadlock(tool, target, found, waiting));
    }
    return null;
  }

  /**
   * Runs `body` holding the tool's own rules `own` (never its targets' resources), unless they
   * conflict with what a target holds: then the answer is, at once, the refusal naming the
   * overlap and `/job-kill ID`. The check runs again once the rules are held (a target still
   * waiting for its locks may have been granted them meanwhile).
   */
  async function withOwnLocks(
    tool: string,
    label: string,
    own: readonly NormalizedResource[],
    context: ToolContext,
    targets: () => readonly { id: number; command: string }[],
    body: () => Promise<ToolResult>,
  ): Promise<ToolResult> {
    const refused = selfConflict(tool, own, targets());
    if (refused !== null) return refused;
    if (own.length === 0) return body();
    const owner = { label, kind: 'tool', tool, ...(context.ref === undefined ? {} : { ref: context.ref }) };
    const lease = await runtime.locks.acquire(owner, own, context.signal ? { signal: context.signal } : {});
    try {
      return selfConflict(tool, own, targets()) ?? (await body());
    } finally {
      lease.release();
    }
  }

  /** What job `id` holds, else what it waits for (`waiting`); nothing for a job that is gone. */
  function claimsOf(id: number): { resources: NormalizedResource[]; waiting: boolean } {
    try {
      const held = runtime.heldResources(id);
      if (held.length > 0) return { resources: held, waiting: false };
      const wanted = runtime.wantedResources(id);
      return { resources: wanted, waiting: wanted.length > 0 };
    } catch (error) {
      if (error instanceof JobNotFoundError) return { resources: [], waiting: false };
      throw error;
    }
  }

  /**
   * Tells `onWaiting` that job `id` waits for its locks: at once when the lock table names who
   * holds them, else (held outside this runtime, or just being taken) once it still waits after
   * WAITING_TOLD_MS. Returns the timer the call clears when it answers.
   */
  function tellWaiting(id: number, onWaiting: (job: JobReport) => void): NodeJS.Timeout | null {
    const tell = () => {
      const job = findJob(id);
      try {
        if (job?.state === 'waiting') onWaiting(job);
      } catch {
        // A host's listener must not break the call (nor, from the timer, the process).
      }
    };
    if ((findJob(id)?.blockedBy?.length ?? 0) > 0) {
      tell();
      return null;
    }
    return setTimeout(tell, WAITING_TOLD_MS);
  }

  function findJob(id: number): JobReport | undefined {
    return runtime.list().find((job) => job.id === id);
  }

  // --- background ---------------------------------------------------------------------------------

  const bg = backgroundSchema(limits);
  const background = defineTool({
    name: 'background',
    level: 2,
    description: bg.description,
    inputSchema: bg.inputSchema,
    pattern(input) {
      const checked = validate<BackgroundToolInput>(bg.check, input);
      return checked.ok ? say.permissionPattern('background', checked.value.command) : null;
    },
    async call(input, callContext) {
      const checked = validate<BackgroundToolInput>(bg.check, input);
      if (!checked.ok) return refusal(say.badInput('background', checked.problem, bg.check));
      const { command, locks: asked, stdin, merge, tty, timeout, wait, until, until_port: untilPort } = checked.value;
      const badPattern = until === undefined ? null : patternProblem(until);
      if (badPattern !== null) return refusal(say.badInput('background', badPattern, bg.check));
      const problem = commandProblem(command);
      if (problem !== null) return refusal(say.refusedInput('background', problem));
      const context = resolve(callContext);
      try {
        const locks = [...ownRules('background', context), ...normalizeResources(asked ?? [])];
        // The runtime enforces the cap; asking its rule first spares the user an approval for nothing.
        const full = capacityError(runtime.list().filter((job) => job.state === 'running'), runtime.settings.maxJobs);
        if (full) throw full;
        const refused = await ask('background', say.permissionPattern('background', command), input, context);
        if (refused !== null) return refused;
        const capped = wait === undefined ? undefined : capWait(seconds(wait), context.maxWaitMs);
        const request: BackgroundInput = {
          command,
          ...(stdin === undefined ? {} : { stdin }),
          ...(merge === undefined ? {} : { merge }),
          ...(tty === undefined ? {} : { tty }),
          ...(timeout === undefined ? {} : { timeoutMs: seconds(timeout) }),
          ...(capped === undefined ? {} : { waitMs: capped.waitMs }),
          ...(until === undefined ? {} : { until }),
          ...(untilPort === undefined ? {} : { untilPort }),
          cwd: context.cwd,
          env: context.env,
          ...(context.ref === undefined ? {} : { ref: context.ref }),
          ...(locks.length === 0 ? {} : { locks: locks.map(({ resource, mode }) => ({ resource, mode })) }),
          // A locked call answers in time (below a client's timeout), with the job still waiting
          // if its locks are not free by then: it keeps its place, and a notice tells when it starts.
          ...(locks.length === 0 ? {} : { answerWithinMs: capWait(wait === undefined ? LOCKED_CALL_WAIT_MS : seconds(wait), context.maxWaitMs).waitMs }),
        };
        // The job is listed before the runtime's first await: known now, in case the caller stops
        // waiting (context.signal) while the job waits for its locks. It keeps its place then.
        const known = new Set(runtime.list().map((job) => job.id));
        const started = runtime.background(request);
        const queued = runtime.list().find((job) => !known.has(job.id));
        const told = queued?.state === 'waiting' && context.onWaiting ? tellWaiting(queued.id, context.onWaiting) : null;
        try {
          return jobResult(afterCut(await unlessAborted(started, context.signal, async () => (queued ? (findJob(queued.id) ?? started) : started)), capped));
        } finally {
          if (told) clearTimeout(told);
        }
      } catch (error) {
        return errorAnswer('background', error);
      }
    },
  });

  // --- job_status ---------------------------------------------------------------------------------

  const st = jobStatusSchema(limits);
  const job_status = defineTool({
    name: 'job_status',
    level: 0,
    description: st.description,
    inputSchema: st.inputSchema,
    pattern() {
      return null;
    },
    async call(input, callContext) {
      const checked = validate<JobStatusToolInput>(st.check, input ?? {});
      if (!checked.ok) return refusal(say.badInput('job_status', checked.problem, st.check));
      const { id, lines, since, max_bytes: maxBytes, wait, until, until_port: untilPort, filter } = checked.value;
      const badPattern = (until === undefined ? null : patternProblem(until)) ?? (filter === undefined ? null : patternProblem(filter, 'filter'));
      if (badPattern !== null) return refusal(say.badInput('job_status', badPattern, st.check));
      const waitField = wait !== undefined || until !== undefined || untilPort !== undefined;
      if (id === undefined && (lines !== undefined || since !== undefined || maxBytes !== undefined || waitField || filter !== undefined)) {
        return refusal(say.linesWithoutId());
      }
      const asked = { lines, since, filter };
      const read = {
        ...(lines === undefined ? {} : { lines }),
        ...(since === undefined ? {} : { since }),
        ...(filter === undefined ? {} : { filter }),
        ...(maxBytes === undefined ? {} : { maxBytes }),
        ...(wait === undefined ? {} : { waitMs: seconds(wait) }),
        ...(until === undefined ? {} : { until }),
        ...(untilPort === undefined ? {} : { untilPort }),
      };
      const context = resolve(callContext);
      const capped = read.waitMs === undefined ? undefined : capWait(read.waitMs, context.maxWaitMs);
      if (capped) read.waitMs = capped.waitMs;
      try {
        const own = ownRules('job_status', context);
        if (id === undefined) {
          return await withOwnLocks('job_status', say.callLabel('job_status'), own, context, () => runtime.list(), async () =>
            listResult(buildListReport(runtime.list(), runtime.settings.maxJobs)),
          );
        }
        const target = findJob(id);
        if (!target) throw notFound(id);
        // A wait stopped by context.signal answers with the job as it is now.
        const { waitMs: _waitMs, until: _until, untilPort: _untilPort, ...now } = read;
        return await withOwnLocks('job_status', say.callLabel('job_status', id), own, context, () => [target], async () =>
          jobResult(afterCut(await unlessAborted(runtime.status(id, read), context.signal, () => runtime.status(id, now)), capped), asked),
        );
      } catch (error) {
        return errorAnswer('job_status', error);
      }
    },
  });

  // --- tools that act on one job: job_kill, job_input, job_restart --------------------------------

  /**
   * A level-2 tool aimed at one job. Like job_kill (SPEC 6): it never takes its target's
   * resources, fails at once when its own rules overlap them, asks the user (unless the target has
   * ended and there is nothing to act on), and only then holds its own rules around the action.
   */
  function targetedTool<I extends { id: number }>(
    name: string,
    schema: ToolSchema,
    action: (input: I) => Promise<ToolResult>,
    askWhenEnded: boolean,
    subject: (target: JobReport, input: I) => string = (target) => target.command,
  ): ToolDefinition {
    return defineTool({
      name,
      level: 2,
      description: schema.description,
      inputSchema: schema.inputSchema,
      pattern(input) {
        const checked = validate<I>(schema.check, input);
        if (!checked.ok) return null;
        const target = findJob(checked.value.id);
        return target ? say.permissionPattern(name, subject(target, checked.value)) : null;
      },
      async call(input, callContext) {
        const checked = validate<I>(schema.check, input);
        if (!checked.ok) return refusal(say.badInput(name, checked.problem, schema.check));
        const { id } = checked.value;
        const context = resolve(callContext);
        try {
          const target = findJob(id);
          if (!target) throw notFound(id);
          const own = ownRules(name, context);
          // Fail at once on an overlap, before the user is asked anything.
          const refused = selfConflict(name, own, [target]);
          if (refused !== null) return refused;
          const ended = target.cleanedUp && target.state !== 'running' && target.state !== 'waiting';
          if (askWhenEnded || !ended) {
            const denied = await ask(name, say.permissionPattern(name, subject(target, checked.value)), input, context);
            if (denied !== null) return denied;
          }
          // The rules are taken after the question, so no lock is held while the user thinks.
          return await withOwnLocks(name, say.callLabel(name, id), own, context, () => [target], () => action(checked.value));
        } catch (error) {
          return errorAnswer(name, error);
        }
      },
    });
  }

  const job_kill = targetedTool<JobKillToolInput>(
    'job_kill',
    jobKillSchema(),
    async ({ id, signal, grace }) =>
      jobResult(await runtime.kill(id, { ...(signal ? { signal } : {}), ...(grace === undefined ? {} : { graceMs: seconds(grace) }) })),
    false,
  );

  // The pattern names the text as well as the target: "always" approves writing that text to a
  // job of that command, never other text (an approval must not cover what the person did not see).
  const job_input = targetedTool<JobInputToolInput>(
    'job_input',
    jobInputSchema(),
    async ({ id, text, close }) => jobResult(await runtime.input(id, { ...(text === undefined ? {} : { text }), close: close === true })),
    false,
    (target, { text, close }) => say.inputSubject(target.command, text ?? '', close === true),
  );

  const job_restart = targetedTool<JobRestartToolInput>(
    'job_restart',
    jobRestartSchema(),
    async ({ id }) => {
      // A locked job answers in time, as background does (the new job keeps its place).
      const { stopped, started: report } = await runtime.restart(id, { answerWithinMs: LOCKED_CALL_WAIT_MS });
      const started = shown.present(report);
      return { text: `${stopped.header}\n${started.text}`, isError: false, job: started, stopped };
    },
    true,
  );

  function notFound(id: number): JobNotFoundError {
    return new JobNotFoundError(id, runtime.list().map((job) => job.id));
  }

  async function userKillCall(raw: number | string): Promise<ToolResult> {
    const id = typeof raw === 'string' && /^\s*\d+\s*$/.test(raw) ? Number(raw) : raw;
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) return refusal(say.notAJobNumber(raw));
    try {
      return jobResult(await runtime.userKill(id));
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

/** A tool from its `call`: `run` is the call's text. */
function toolFrom(definition: Omit<ToolDefinition, 'run'>): ToolDefinition {
  return {
    ...definition,
    async run(input, context) {
      return (await definition.call(input, context)).text;
    },
  };
}

/** Tool inputs are in seconds (what a model thinks in); the runtime takes milliseconds. */
function seconds(value: number): number {
  return Math.round(value * 1000);
}

export type { JsonSchema, ToolContext, ToolResult };
export { waitingText } from './wait-cap.js';
export type { ApprovalAnswer, ApprovalRequest, Approver } from './approval.js';
export type { BackgroundToolInput, JobKillToolInput, JobStatusToolInput } from './schema.js';
export { Notices, noticeText } from './notices.js';
export type { JobNotice } from './result.js';
