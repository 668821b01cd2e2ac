/**
 * Job limits as a host and a call give them: the host's are every job's defaults and ceilings, a
 * call may tighten one and never loosen it past the host's. Checked here, combined into what the
 * supervisor enforces (src/protocol/limits.ts).
 */
import { checkInteger, describeValue } from '../protocol/describe.js';
import { NO_LIMITS, type JobLimits } from '../protocol/limits.js';

/** What a host (JobRuntimeOptions.limits) or a call (background's `limits`) may set. */
export interface Limits {
  /** Memory of all the job's processes together, in bytes (at least 1 MiB); over it the job is stopped whole. */
  memoryBytes?: number;
  /** Cores of CPU time, e.g. 1.5 (0.01 to 1024); over it the job is slowed, not stopped. */
  cpus?: number;
  /** Processes at once (1 to 4194304); a fork past it fails inside the job. */
  processes?: number;
}

export const MIN_LIMIT_MEMORY = 1 << 20;
export const MAX_LIMIT_MEMORY = 2 ** 50;
const MAX_PROCESSES = 4_194_304;
const MAX_CPUS = 1024;

/** `value` (a Limits object, or undefined for none) checked: TypeError / RangeError saying what is accepted. */
export function checkLimits(where: string, value: unknown): JobLimits {
  if (value === undefined) return NO_LIMITS;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${where} must be an object with memoryBytes, cpus and/or processes; received ${describeValue(value)}`);
  }
  const given = value as Record<string, unknown>;
  const unknown = Object.keys(given).filter((key) => !['memoryBytes', 'cpus', 'processes'].includes(key));
  if (unknown.length > 0) throw new TypeError(`${where} has no field ${unknown.join(', ')}: it takes memoryBytes, cpus and processes`);
  return {
    memoryBytes: given.memoryBytes === undefined ? null : checkInteger(`${where}.memoryBytes`, given.memoryBytes, MIN_LIMIT_MEMORY, MAX_LIMIT_MEMORY),
    processes: given.processes === undefined ? null : checkInteger(`${where}.processes`, given.processes, 1, MAX_PROCESSES),
    cpuMillis: given.cpus === undefined ? null : cpuMillis(`${where}.cpus`, given.cpus),
  };
}

function cpuMillis(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError(`${name} must be a number of cores such as 1.5; received ${describeValue(value)}`);
  if (value < 0.01 || value > MAX_CPUS) throw new RangeError(`${name} must be from 0.01 to ${MAX_CPUS} cores; received ${value}`);
  return Math.round(value * 1000);
}

/** The call's limits within the host's: each the call's where it set one, else the host's; past a host ceiling, a RangeError. */
export function combineLimits(host: JobLimits, call: JobLimits): JobLimits {
  const pick = (key: keyof JobLimits, shown: (value: number) => string): number | null => {
    const ceiling = host[key];
    const asked = call[key];
    if (asked === null) return ceiling;
    if (ceiling !== null && asked > ceiling) {
      throw new RangeError(`limits: ${shown(asked)} is above the host's ceiling of ${shown(ceiling)}; a call may only tighten a limit, so ask for ${shown(ceiling)} or less`);
    }
    return asked;
  };
  return {
    memoryBytes: pick('memoryBytes', (bytes) => `memoryBytes ${bytes}`),
    processes: pick('processes', (count) => `processes ${count}`),
    cpuMillis: pick('cpuMillis', (millis) => `cpus ${millis / 1000}`),
  };
}

/** The Limits a call would give to get `limits` again (job_restart). */
export function limitsInput(limits: JobLimits): Limits {
  return {
    ...(limits.memoryBytes === null ? {} : { memoryBytes: limits.memoryBytes }),
    ...(limits.processes === null ? {} : { processes: limits.processes }),
    ...(limits.cpuMillis === null ? {} : { cpus: limits.cpuMillis / 1000 }),
  };
}
