/** Where a tool call comes from (cwd, env, ref), and how a call's context falls back to the defaults. */
import { toolsConfig } from '../wording.js';

/** Where a call comes from: the ref's worktree, the environment a shell command gets, the ref. */
export interface ToolContext {
  /** The job's working directory (the ref's worktree); also `{worktree}` in lock rules. Default: `defaults.cwd`, else the runtime's. */
  cwd?: string;
  /** The environment a shell command would get. Default: `defaults.env`, else the runtime's. */
  env?: NodeJS.ProcessEnv;
  /** The ref (branch/worktree name) the call belongs to; `{ref}` in lock rules. Default: `defaults.ref`. */
  ref?: string;
}

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
    };
  };
}
