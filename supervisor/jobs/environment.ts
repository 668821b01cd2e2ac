/**
 * The base environment the runtime sent (request `environment`), and a job's environment built
 * from a spawn's fields: the whole list as sent, or the base less `envUnset` with `env` set over
 * it. The runtime sends a base once and then only differences, so a spawn whose environment is
 * the runtime's own carries none (bench: spawn).
 */
import { ProtocolError } from '../../src/protocol/errors.js';
import type { SpawnParams } from '../../src/protocol/messages.js';

interface Base {
  readonly version: number;
  /** As sent: what a spawn with no differences gets, without a copy. */
  readonly entries: readonly string[];
}

/** The name of a `NAME=value` entry (the shape check has made sure there is a `=`). */
function nameOf(entry: string): string {
  return entry.slice(0, entry.indexOf('='));
}

export class BaseEnvironment {
  private base: Base | null = null;

  /** Replaces the base. */
  set(version: number, entries: readonly string[]): void {
    this.base = { version, entries };
  }

  /** The job's entries (HEPH_JOB is added by the caller); a base the supervisor does not hold is a protocol error. */
  of(params: Pick<SpawnParams, 'env' | 'envBase' | 'envUnset'>): readonly string[] {
    const { env, envBase, envUnset } = params;
    if (envBase === undefined || envBase === null) {
      if (envUnset && envUnset.length > 0) throw new ProtocolError('request spawn: params.envUnset needs params.envBase');
      return env;
    }
    const base = this.base;
    if (base === null || base.version !== envBase) {
      throw new ProtocolError(`request spawn: params.envBase ${envBase} is not the environment held (${base === null ? 'none was sent' : `version ${base.version}`})`);
    }
    if (env.length === 0 && (!envUnset || envUnset.length === 0)) return base.entries;
    // The rare path (a call with an environment of its own, or process.env changed since the base).
    // A changed variable keeps its place and a new one comes last, as setenv leaves them.
    const byName = new Map(base.entries.map((entry) => [nameOf(entry), entry]));
    for (const name of envUnset ?? []) byName.delete(name);
    for (const entry of env) byName.set(nameOf(entry), entry);
    return [...byName.values()];
  }
}
