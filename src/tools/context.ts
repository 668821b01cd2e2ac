/** Where a tool call comes from (cwd, env, ref), and how a call's context falls back to the defaults. */
import type { JobReport } from '../reports/report.js';
import { toolsConfig } from '../wording/index.js';

/** Where a call comes from: the ref's worktree, the environment a shell command gets, the ref. */
export interface ToolContext {
  /** The job's working directory (the ref's worktree); also `{worktree}` in lock rules. Default: `defaults.cwd`, else the runtime's. */
  cwd?: string;
  /** The environment a shell command would get. Default: `defaults.env`, else the runtime's. */
  env?: NodeJS.ProcessEnv;
  /** The ref (branch/worktree name) the call belongs to; `{ref}` in lock rules. Default: `defaults.ref`. */
  ref?: string;
  /**
   * Stops the call's waiting, not what it waits for: a `job_status` wait answers at once with the
   * job as it is; a `background` whose job waits for its locks answers at once with that job's
   * report, and the job keeps its place in the queue; the wait for a tool's own lock rules is
   * given up (nothing runs). The call's action itself (a kill under way) is not interrupted.
   */
  signal?: AbortSignal;
  /**
   * The longest this call's `wait` may run, in ms, for a host whose client gives up on a call
   * sooner than a wait may ask (an MCP client's request timeout). A longer wait is cut to it, and
   * the answer says so and names the call that waits on. Default: no cap.
   */
  maxWaitMs?: number;
  /**
   * Told once when a `background` call's job has to wait for its locks (at once when the lock
   * table names who holds them, else when it has waited WAITING_TOLD_MS), with the job's report
   * (`state: 'waiting'`, `wants`, `blockedBy`): a shell shows it, a server can send progress.
   */
  onWaiting?: (job: JobReport) => void;
}

/** When a wait for locks held outside this runtime (no holder in its table) is told to onWaiting. */
export const WAITING_TOLD_MS = 1000;

/** A call's context with every field that has a fallback filled in. */
export type ResolvedContext = Required<Pick<ToolContext, 'cwd' | 'env'>> & ToolContext;

/** `context` when it has the shape of a ToolContext; a host's mistake otherwise (thrown at configuration time). */
export function checkContext(name: string, context: unknown): ToolContext {
  if (context === null || typeof context !== 'object' || Array.isArray(context)) {
    throw new TypeError(toolsConfig.contextNotAnObject(name, context));
  }
  const { cwd, env, ref } = context as Record<string, unknown>;
  if (cwd !== undefined && typeof cwd !== 'string') throw new TypeError(toolsConfig.badCwd(name, cwd));
  if (env !== undefined && (env === null || typeof env !== 'object')) throw new TypeError(toolsConfig.badEnv(name, env));
  if (ref !== undefined && typeof ref !== 'string') throw new TypeError(toolsConfig.badRef(name, ref));
  return context as ToolContext;
}

/** The call's context: each field from the call, else `defaults`, else the runtime's `settings`. */
export function contextResolver(defaults: ToolContext, settings: { cwd: string; env: NodeJS.ProcessEnv }) {
  return (context: ToolContext | undefined): ResolvedContext => {
    const given: ToolContext = context !== null && typeof context === 'object' ? context : {};
    const ref = given.ref ?? defaults.ref;
    return {
      cwd: given.cwd ?? defaults.cwd ?? settings.cwd,
      env: given.env ?? defaults.env ?? settings.env,
      ...(ref === undefined ? {} : { ref }),
      ...(given.signal === undefined ? {} : { signal: given.signal }),
      ...(given.maxWaitMs === undefined ? {} : { maxWaitMs: given.maxWaitMs }),
      ...(given.onWaiting === undefined ? {} : { onWaiting: given.onWaiting }),
    };
  };
}

/**
 * `work`'s answer, or, when `signal` fires first, `instead()`'s. `work` goes on either way (what it
 * waits for is not cancelled); a failure it meets after the caller stopped waiting is nobody's.
 */
export function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, instead: () => Promise<T>): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => undefined);
      instead().then(resolve, reject);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
