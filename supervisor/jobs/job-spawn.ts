/**
 * Spawning a job's leader: its cgroup made ahead, its terminal opened (`tty: true`), the native
 * spawn's options resolved, and a failure turned into a SpawnError with nothing left behind (the
 * cgroup removed, the terminal closed).
 */
import { SpawnError } from '../../src/protocol/errors.js';
import type { SpawnParams, SupervisorConfig } from '../../src/protocol/messages.js';
import type { ContainmentStrategy } from '../containment/index.js';
import { native, type NativeSpawnOptions, type NativeSpawnResult } from '../native.js';
import { jobMarker } from '../names.js';
import { spawnLeader } from './leader-spawn.js';
import { hasLimits } from '../../src/protocol/limits.js';
import { JobLimitHold } from '../limits/job-limits.js';
import { openTerminal, terminalEnv, type Terminal } from './terminal.js';

/** A leader just spawned, with the cgroup and terminal it was spawned into, and its limits. */
export interface SpawnedLeader {
  spawned: NativeSpawnResult;
  cgroup: string | null;
  terminal: Terminal | null;
  limits: JobLimitHold | null;
}

/** The native spawn's options for a job's leader (`terminal`: its controlling terminal, if any). */
function leaderOptions(params: SpawnParams, env: readonly string[], cgroup: string | null, terminal: Terminal | null, limits: JobLimitHold | null, config: SupervisorConfig): NativeSpawnOptions {
  return {
    joinGroups: limits?.joinGroups ?? [],
    shell: params.shell,
    command: params.command,
    cwd: params.cwd,
    env: [...(terminal ? terminalEnv(env) : env), jobMarker(params.job)],
    cgroup,
    stdin: params.stdin ? 'pipe' : 'null',
    merge: params.merge,
    token: params.job + 1,
    forceFork: config.testing?.forceFork ?? false,
    ...(terminal ? { ctty: terminal.slave } : {}),
  };
}

/**
 * Spawns job `params.job`'s leader; `done` gets the SpawnError, or the leader in the turn of the
 * spawn's result (before the reaper's report of it can come). Never throws: on a spawner
 * thread's result this runs from the addon's queue, where an exception would have no caller.
 */
export function spawnJobLeader(
  params: SpawnParams,
  env: readonly string[],
  strategy: ContainmentStrategy,
  config: SupervisorConfig,
  done: (error: SpawnError | null, leader: SpawnedLeader | null) => void,
): void {
  const cgroup = strategy.prepare(params.job);
  let terminal: Terminal | null = null;
  let limits: JobLimitHold | null = null;
  const failed = (error: unknown): SpawnError => {
    limits?.release();
    if (terminal) {
      native.closeFd(terminal.master);
      native.closeFd(terminal.slave);
    }
    if (cgroup) native.cgroupRemove(cgroup);
    return spawnFailure(error, params);
  };
  let options: NativeSpawnOptions;
  try {
    limits = hasLimits(params.limits) ? new JobLimitHold(params.limits, params.job, cgroup) : null;
    terminal = params.tty === true ? openTerminal() : null;
    options = leaderOptions(params, env, cgroup, terminal, limits, config);
  } catch (error) {
    return done(failed(error), null);
  }
  spawnLeader(options, config.testing?.spawnOn ?? 'auto', (error, spawned) => {
    if (!error && spawned) return done(null, { spawned, cgroup, terminal, limits });
    let failure: unknown;
    try {
      failure = failed(error);
    } catch (thrown) {
      failure = thrown;
    }
    done(failure as SpawnError, null);
  });
}

/** The SpawnError of a start that failed with `error`, in words that name what to fix. */
export function spawnFailure(error: unknown, params: SpawnParams): SpawnError {
  return spawnError(describeSpawnFailure(error, params), error);
}

/** A SpawnError saying `message`, with the native error's code, errno, syscall and path. */
export function spawnError(message: string, cause: unknown): SpawnError {
  return new SpawnError(message, { cause, details: nativeDetails(cause) });
}

function nativeDetails(error: unknown): Record<string, unknown> {
  const e = error as { code?: unknown; errno?: unknown; syscall?: unknown; path?: unknown };
  return { code: e.code, errno: e.errno, syscall: e.syscall, path: e.path };
}

function describeSpawnFailure(error: unknown, params: SpawnParams): string {
  const e = error as { code?: string; syscall?: string; message?: string };
  if (e.syscall === 'chdir') {
    if (e.code === 'ENOENT') return `the working directory ${params.cwd} does not exist`;
    if (e.code === 'ENOTDIR') return `the working directory ${params.cwd} is not a directory`;
    return `cannot enter the working directory ${params.cwd} (${e.code})`;
  }
  if (e.syscall === 'cgroup.procs') return `could not move the job into its cgroup or its limits' groups: ${e.message ?? String(error)}`;
  if (e.syscall === 'execve') return `cannot run the shell ${params.shell} (${e.code}); a POSIX shell is needed to run commands`;
  return `could not start the job: ${e.message ?? String(error)}`;
}
