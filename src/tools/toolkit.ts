/**
 * What every tool shares: the runtime's port, the call's context, the approval gate, the lock
 * rules and the self-conflict check, how a report is shown, and the notices every answer ends
 * with. One toolkit per createTools; each tool (background.ts, job-status.ts, targeted.ts) is
 * made from it.
 */
import { JobNotFoundError } from '../protocol/errors.js';
import { expandRules, overlaps, type LockRules, type NormalizedResource } from '../locks/index.js';
import type { JobReport } from '../reports/report.js';
import { toolPortOf, type ToolRuntime } from '../runtime/tool-port.js';
import * as say from '../wording/index.js';
import { approvalGate, type Approver, type Ask } from './approval.js';
import { checkContext, contextResolver, WAITING_TOLD_MS, type ResolvedContext, type ToolContext } from './context.js';
import { jobResult as reportResult, refusal, type ToolResult } from './result.js';
import { ShownLines, type ReadAsked, type ReadsMode } from './shown-lines.js';
import { Notices } from './notices.js';
import type { ToolDefinition } from './definition.js';

export interface ToolkitOptions {
  approve?: Approver;
  rules: LockRules;
  defaults?: ToolContext;
  reads?: ReadsMode;
  notices?: boolean;
}

export class Toolkit {
  readonly port: ToolRuntime;
  readonly resolve: (context: ToolContext | undefined) => ResolvedContext;
  readonly ask: Ask;
  readonly notices: Notices | null;
  readonly limits: { maxJobs: number; outputLines: number };
  readonly shown: ShownLines;
  private readonly rules: LockRules;

  constructor(runtime: object, options: ToolkitOptions) {
    this.port = toolPortOf(runtime);
    this.rules = options.rules;
    this.resolve = contextResolver(checkContext('createTools option defaults', options.defaults ?? {}), this.port.settings);
    this.ask = approvalGate(options.approve);
    this.notices = options.notices === false ? null : new Notices(this.port);
    this.limits = { maxJobs: this.port.settings.maxJobs, outputLines: this.port.settings.outputLines };
    this.shown = new ShownLines(options.reads ?? 'tail');
  }

  /** A tool from its `call`: every answer ends with the notices due (notices.ts); `run` is its text. */
  define(definition: Omit<ToolDefinition, 'run'>): ToolDefinition {
    const notices = this.notices;
    const call: ToolDefinition['call'] = async (input, context) => (notices ? notices.finish(await definition.call(input, context)) : definition.call(input, context));
    return {
      ...definition,
      call,
      async run(input, context) {
        return (await call(input, context)).text;
      },
    };
  }

  /** A report as the answer, shown as these tools show reads (src/tools/shown-lines.ts). */
  jobResult(report: JobReport, asked?: ReadAsked): ToolResult {
    return reportResult(this.shown.present(report, asked));
  }

  /** Job `id` as it is now (no output), or undefined. */
  findJob(id: number): JobReport | undefined {
    return this.port.job(id);
  }

  notFound(id: number): JobNotFoundError {
    return new JobNotFoundError(id, this.port.jobIds());
  }

  /** The tool's own rules for this call (throws BadLockRuleError / BadResourceError). */
  ownRules(tool: string, context: ToolContext & { cwd: string }): readonly NormalizedResource[] {
    return expandRules(this.rules, tool, { ref: context.ref, worktree: context.cwd });
  }

  /**
   * The refusal of `tool` at once if its own rules conflict with what a target holds or, while it
   * waits for its locks, what it waits for (the fair queue would put this call behind it, and it
   * would then hold them until it ends); else null.
   */
  selfConflict(tool: string, own: readonly NormalizedResource[], targets: readonly { id: number; command: string }[]): ToolResult | null {
    if (own.length === 0) return null;
    for (const target of targets) {
      const { resources, waiting } = this.claimsOf(target.id);
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
  async withOwnLocks(
    tool: string,
    label: string,
    own: readonly NormalizedResource[],
    context: ToolContext,
    targets: () => readonly { id: number; command: string }[],
    body: () => Promise<ToolResult>,
  ): Promise<ToolResult> {
    const refused = this.selfConflict(tool, own, targets());
    if (refused !== null) return refused;
    if (own.length === 0) return body();
    const owner = { label, kind: 'tool', tool, ...(context.ref === undefined ? {} : { ref: context.ref }) };
    const lease = await this.port.locks.acquire(owner, own, context.signal ? { signal: context.signal } : {});
    try {
      return this.selfConflict(tool, own, targets()) ?? (await body());
    } finally {
      lease.release();
    }
  }

  /** What job `id` holds, else what it waits for (`waiting`); nothing for a job that is gone. */
  private claimsOf(id: number): { resources: NormalizedResource[]; waiting: boolean } {
    try {
      const held = this.port.held(id);
      if (held.length > 0) return { resources: held, waiting: false };
      const wanted = this.port.wanted(id);
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
  tellWaiting(id: number, onWaiting: (job: JobReport) => void): NodeJS.Timeout | null {
    const tell = () => {
      const job = this.findJob(id);
      try {
        if (job?.state === 'waiting') onWaiting(job);
      } catch {
        // A host's listener must not break the call (nor, from the timer, the process).
      }
    };
    if ((this.findJob(id)?.blockedBy?.length ?? 0) > 0) {
      tell();
      return null;
    }
    return setTimeout(tell, WAITING_TOLD_MS);
  }
}

/** Tool inputs are in seconds (what a model thinks in); the runtime takes milliseconds. */
export function seconds(value: number): number {
  return Math.round(value * 1000);
}
