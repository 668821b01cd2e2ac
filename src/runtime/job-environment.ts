/**
 * A job's environment, sent as little as possible. The supervisor keeps a base environment (request
 * `environment`) and each spawn carries only what differs from it, so a job that inherits the
 * runtime's environment costs neither encoding nor decoding a whole environment (bench: spawn).
 *
 * What a job gets does not change: the call's environment as it is at the call, read whole
 * every time (process.env is live: a variable set or deleted after the runtime started is seen by
 * the next call). Only what is unchanged since the base skips the per-entry checks and the wire.
 */
import type { SpawnParams } from '../protocol/messages.js';
import { checkEnvObject, envEntries, envEntry } from './input-checks.js';
import type { SupervisorClient } from './supervisor-client.js';

/** A checked environment the supervisor may hold, known by its version. */
interface Base {
  readonly version: number;
  readonly entries: string[];
  /** Variable name to value (HEPH_JOB never in it). */
  readonly values: ReadonlyMap<string, string>;
}

/** A call's environment: its base, the entries set over it and the names taken out of it. */
export interface CallEnvironment {
  readonly base: Base;
  readonly set: string[];
  readonly unset: string[];
}

/** Past this many differences an environment of a call's own becomes the base itself. */
const MAX_DIFFERENCES = 16;

/** The base's names that `env` no longer has. */
function missingFrom(env: NodeJS.ProcessEnv, keys: string[], values: ReadonlyMap<string, string>): string[] {
  const present = new Set(keys);
  return [...values.keys()].filter((key) => !present.has(key) || env[key] === undefined);
}

export class JobEnvironments {
  private current: Base | null = null;
  private nextVersion = 1;
  /** The base version each supervisor holds (a new supervisor holds none). */
  private readonly held = new WeakMap<SupervisorClient, number>();

  /**
   * Reads and checks `env` now (InvalidInputError as `envEntries` says). `own`: it is the runtime's
   * default environment, which then becomes the base whenever it differs from it (a call with an
   * environment of its own is sent as differences, so calls with and without one do not take
   * turns replacing the base).
   */
  capture(env: NodeJS.ProcessEnv, own: boolean): CallEnvironment {
    checkEnvObject(env);
    const base = this.current;
    if (base === null) return this.rebase(env);
    const set: string[] = [];
    const keys = Object.keys(env);
    let same = 0;
    for (const key of keys) {
      const value = env[key];
      if (value === undefined) continue;
      // Equal to the base's value: a string that was checked when the base was made.
      if (base.values.get(key) === value) {
        same++;
        continue;
      }
      const entry = envEntry(key, value);
      if (entry !== null) set.push(entry);
    }
    // Each key comes once, so all of the base was seen unchanged exactly when `same` is its size.
    const unset = same === base.values.size ? [] : missingFrom(env, keys, base.values);
    if (set.length === 0 && unset.length === 0) return { base, set, unset };
    if (own || set.length + unset.length > MAX_DIFFERENCES) return this.rebase(env);
    return { base, set, unset };
  }

  /**
   * The spawn's environment fields for `call` on `supervisor`. When that supervisor does not hold
   * the call's base, the base is sent first (`sent`: its reply, which the caller awaits with the
   * spawn's; the channel keeps their order, so the spawn finds it).
   */
  fieldsFor(supervisor: SupervisorClient, call: CallEnvironment): { fields: Pick<SpawnParams, 'env' | 'envBase' | 'envUnset'>; sent: Promise<null> | null } {
    const { base, set, unset } = call;
    let sent: Promise<null> | null = null;
    if (this.held.get(supervisor) !== base.version) {
      // Marked held once the request is on its way (a base too large for a frame throws here).
      sent = supervisor.request('environment', { version: base.version, entries: base.entries });
      this.held.set(supervisor, base.version);
      sent.catch(() => {
        if (this.held.get(supervisor) === base.version) this.held.delete(supervisor);
      });
    }
    return { fields: { env: set, envBase: base.version, ...(unset.length > 0 ? { envUnset: unset } : {}) }, sent };
  }

  private rebase(env: NodeJS.ProcessEnv): CallEnvironment {
    const entries = envEntries(env);
    const values = new Map(entries.map((entry) => {
      const at = entry.indexOf('=');
      return [entry.slice(0, at), entry.slice(at + 1)] as const;
    }));
    const base = { version: this.nextVersion++, entries, values };
    this.current = base;
    return { base, set: [], unset: [] };
  }
}
