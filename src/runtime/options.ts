/**
 * Runtime options: defaults in one place (each with where it comes from), normalised once and
 * validated with messages that name the option, say what is accepted, and show what was received.
 */
import { checkLimits, MAX_LIMIT_MEMORY, MIN_LIMIT_MEMORY, type Limits } from './limits.js';
import type { JobLimits } from '../protocol/limits.js';
import os from 'node:os';
import path from 'node:path';
import { MAX_FRAME_BYTES } from '../protocol/codec.js';
import { checkInteger, describeValue } from '../protocol/describe.js';
import { CONTAINMENT_CHOICES, type ContainmentChoice, type TestSwitches } from '../protocol/messages.js';
import { choiceOption } from './choice-option.js';
import { testSwitchesOf } from './test-switches.js';
import { OUTPUT_HEAD_LINES, OUTPUT_MAX_BYTES, OUTPUT_MAX_LINE_BYTES, OUTPUT_MAX_LINES, READ_MAX_BYTES, READ_TAIL_LINES } from '../protocol/output.js';

/** The settle window: long enough for "command not found" to come back, short enough not to notice. */
export const SETTLE_MS = 300;
/** SPEC 4: at most eight jobs run at once. */
export const MAX_JOBS = 8;
/** Finished jobs kept readable (the peer system keeps its 50 most recent exits). */
export const KEEP_FINISHED = 50;
/** SPEC 4: TERM, then this long, then KILL. */
export const KILL_GRACE_MS = 2000;
/** How long output is still read after every process of a job is gone. */
export const DRAIN_MS = 500;
export { OUTPUT_HEAD_LINES, OUTPUT_MAX_BYTES, OUTPUT_MAX_LINE_BYTES, OUTPUT_MAX_LINES };
/** SPEC 5: a read shows at most the last 50 lines unless asked for more. */
export const DEFAULT_TAIL_LINES = READ_TAIL_LINES;
/** Bound on the output one read returns. */
export const DEFAULT_MAX_BYTES = READ_MAX_BYTES;
/** Most lines a job's ring may keep: enough for any log a person reads back, and few enough that a
 * read of all of them (with their per-line overhead) still fits in one frame. */
export const MAX_OUTPUT_LINES = 100_000;
/** Longest line the ring may keep, in bytes. */
export const MAX_LINE_BYTES = 1024 * 1024;
/**
 * A read's reply beside its text, in msgpack bytes. Per line (an OutputLine without its text): the
 * keys seq, stream, text, cutBytes, partial, clippedBytes (46 bytes), their values at their widest
 * (a uint64 is 9 bytes, "stdout" 7, a string header 5, true 1: 41), a map header (1): 88, rounded up.
 */
export const READ_LINE_OVERHEAD_BYTES = 96;
/** The rest of the reply: the envelope and the read's counters (well under 1 KiB) and the job's
 * facts, whose largest part is its listening ports (at most 65 536, 3 bytes each: 192 KiB). */
export const READ_REPLY_OVERHEAD_BYTES = 256 * 1024;
/** Rendering shows an invalid byte as `\xHH`: a line's text is at most 4 bytes per raw byte. */
const RENDERED_BYTES_PER_BYTE = 4;
/** Lines a read can return besides the ring's own: one unfinished line per stream. */
const PARTIAL_LINES = 2;

/**
 * The largest `maxBytes` one status may ask for: a frame (MAX_FRAME_BYTES) less the reply's overhead
 * at its worst, every line the ring and the head can hold at READ_LINE_OVERHEAD_BYTES each, the
 * wait's matching line (rendered, not counted in the budget) and READ_REPLY_OVERHEAD_BYTES. So no
 * read can make the supervisor build a reply it cannot send. About 15.5 MiB with the defaults.
 */
export function maxReadBytes(outputLines: number, lineBytes: number): number {
  const lines = outputLines + OUTPUT_HEAD_LINES + PARTIAL_LINES;
  return MAX_FRAME_BYTES - READ_REPLY_OVERHEAD_BYTES - lines * READ_LINE_OVERHEAD_BYTES - RENDERED_BYTES_PER_BYTE * lineBytes;
}
/** How long a locked `background` call waits for its locks when it gives no `wait`, before it
 * answers with the job still waiting (it keeps its place): below the 60 s after which common tool
 * clients (the MCP SDK's) give up on a call. */
export const LOCKED_CALL_WAIT_MS = 30_000;
/** How long a wait for a line or a port (`until`, `untilPort`) that names no time lasts: it asked
 * to wait, so it does, below the same clients' 60 s. */
export const UNTIL_WAIT_MS = 30_000;
/** Longest wait one call may ask for (a model's tool call should not hang for hours). */
export const MAX_WAIT_MS = 10 * 60 * 1000;
/** The highest TCP port (a wait's `untilPort`). */
export const MAX_PORT = 65_535;
/** Longest per-job timeout: a week. */
export const MAX_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000;
/** A command longer than this is refused (Linux allows 128 KiB per argument). */
export const MAX_COMMAND_BYTES = 128 * 1024 - 1;

export interface JobRuntimeOptions {
  /** Working directory for jobs that name none. Default: `process.cwd()`. */
  cwd?: string;
  /** Environment for jobs that pass none. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The POSIX shell commands run through. Default: `/bin/sh`. */
  shell?: string;
  /** `auto` (default; or `$HEPH_JOBS_CONTAINMENT`), `cgroup`, or `process-group`. */
  containment?: ContainmentChoice;
  /** Directory of a writable cgroup v2 tree to use instead of our own cgroup. Default: detected. */
  cgroupParent?: string;
  /** Milliseconds `background` waits before answering. Default: 300. */
  settleMs?: number;
  /** Jobs running at once. Default: 8. */
  maxJobs?: number;
  /** Finished jobs kept readable. Default: 50. */
  keepFinished?: number;
  /** Milliseconds between SIGTERM and SIGKILL. Default: 2000. */
  killGraceMs?: number;
  /** Lines kept per job, at most 100 000. Default: 2000. */
  outputLines?: number;
  /** Directory of the resource lock files, shared by every runtime on the machine that should
   * exclude each other. Default: `$XDG_RUNTIME_DIR/heph-jobs/locks`, else `<tmpdir>/heph-jobs-<uid>/locks`. */
  lockDir?: string;
  /** Bytes per line before it is cut, at most 1 MiB. Default: 8192. */
  lineBytes?: number;
  /** Bytes kept per job's ring. Default: 4 MiB. */
  outputBytes?: number;
  /** `lazy` (default): the first call that needs the supervisor starts it, so a runtime that is
   * only asked for definitions, or whose calls are all refused, starts no process. `eager`: `start()`
   * begins starting it (without waiting), so the first call finds it ready; a start that fails is
   * tried again, and reported, by the first call that needs it. */
  startSupervisor?: SupervisorStart;
  /** Every job's limits, and the ceilings a call's own `limits` may only tighten. Default: none. */
  limits?: Limits;
  /** Memory of all jobs together, in bytes (at least 1 MiB): over it, the job using the most is
   * stopped whole, and again until they are below it. Held by the supervisor's watchdog. Default: none. */
  allJobsMemoryBytes?: number;
}

export type SupervisorStart = 'eager' | 'lazy';

export interface NormalizedOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  shell: string;
  containment: ContainmentChoice;
  cgroupParent: string | null;
  /** Switches only tests set (src/testing.ts); null in every other runtime. */
  testing: TestSwitches | null;
  settleMs: number;
  maxJobs: number;
  keepFinished: number;
  killGraceMs: number;
  outputLines: number;
  lockDir: string;
  lineBytes: number;
  outputBytes: number;
  startSupervisor: SupervisorStart;
  limits: JobLimits;
  allJobsMemoryBytes: number | null;
  /** The largest `maxBytes` a status may ask for (derived: see maxReadBytes). */
  maxReadBytes: number;
}

const SUPERVISOR_STARTS: readonly SupervisorStart[] = ['eager', 'lazy'];

/** `fallback` when the option is left out, else `value` checked (TypeError if not a number, RangeError if fractional or out of range). */
export function integerOption(name: string, value: unknown, fallback: number, min: number, max: number): number {
  return value === undefined ? fallback : checkInteger(`option ${name}`, value, min, max);
}

function stringOption(name: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.length === 0 || value.includes('\0')) {
    throw new TypeError(`option ${name} must be a non-empty string without NUL; received ${describeValue(value)}`);
  }
  return value;
}

export function normalizeOptions(options: JobRuntimeOptions = {}): NormalizedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`JobRuntime options must be an object; received ${describeValue(options)}`);
  }
  const containment = choiceOption('containment', options.containment ?? process.env.HEPH_JOBS_CONTAINMENT, CONTAINMENT_CHOICES, 'auto');
  const startSupervisor = choiceOption('startSupervisor', options.startSupervisor, SUPERVISOR_STARTS, 'lazy');
  const outputLines = integerOption('outputLines', options.outputLines, OUTPUT_MAX_LINES, 1, MAX_OUTPUT_LINES);
  const lineBytes = integerOption('lineBytes', options.lineBytes, OUTPUT_MAX_LINE_BYTES, 16, MAX_LINE_BYTES);
  return {
    cwd: stringOption('cwd', options.cwd, process.cwd()),
    env: options.env ?? process.env,
    shell: stringOption('shell', options.shell, '/bin/sh'),
    containment,
    cgroupParent: options.cgroupParent === undefined ? null : stringOption('cgroupParent', options.cgroupParent, ''),
    testing: testSwitchesOf(options),
    settleMs: integerOption('settleMs', options.settleMs, SETTLE_MS, 0, 60_000),
    maxJobs: integerOption('maxJobs', options.maxJobs, MAX_JOBS, 1, 1024),
    keepFinished: integerOption('keepFinished', options.keepFinished, KEEP_FINISHED, 0, 10_000),
    killGraceMs: integerOption('killGraceMs', options.killGraceMs, KILL_GRACE_MS, 0, 600_000),
    outputLines,
    lockDir: stringOption('lockDir', options.lockDir, defaultLockDir()),
    lineBytes,
    outputBytes: integerOption('outputBytes', options.outputBytes, OUTPUT_MAX_BYTES, 1024, 1024 * 1024 * 1024),
    startSupervisor,
    limits: checkLimits('option limits', options.limits),
    allJobsMemoryBytes: options.allJobsMemoryBytes === undefined ? null : integerOption('allJobsMemoryBytes', options.allJobsMemoryBytes, 0, MIN_LIMIT_MEMORY, MAX_LIMIT_MEMORY),
    maxReadBytes: maxReadBytes(outputLines, lineBytes),
  };
}

function defaultLockDir(): string {
  const runtimeDir = process.env.XDG_RUNTIME_DIR;
  if (runtimeDir && path.isAbsolute(runtimeDir)) return path.join(runtimeDir, 'heph-jobs', 'locks');
  return path.join(os.tmpdir(), `heph-jobs-${process.getuid?.() ?? 'user'}`, 'locks');
}
