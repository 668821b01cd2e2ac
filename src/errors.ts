/**
 * The error hierarchy. Every error we throw is a HephError with a stable `code`, structured
 * `details`, and the underlying error as `cause`. The subclasses that build their own message
 * take its words from src/wording.ts, so messages stay consistent across the library, the tools
 * and the CLI.
 */
import { jobLimitMessage, jobNotFoundMessage, runtimeClosedMessage } from './wording.js';

export interface HephErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class HephError extends Error {
  readonly code: string;
  readonly details: Record<string, unknown>;

  constructor(code: string, message: string, options: HephErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details ?? {};
  }
}

/** A caller passed something we cannot accept. The message says what, and what is accepted. */
export class InvalidInputError extends HephError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('ERR_INVALID_INPUT', message, { details });
  }
}

/** No job with that id exists (never did, or was forgotten). */
export class JobNotFoundError extends HephError {
  constructor(id: unknown, known: readonly number[]) {
    super('ERR_JOB_NOT_FOUND', jobNotFoundMessage(id, known), { details: { id, known: [...known] } });
  }
}

/** Too many jobs run at once. */
export class JobLimitError extends HephError {
  constructor(maxJobs: number, running: readonly { id: number; command: string }[]) {
    super('ERR_JOB_LIMIT', jobLimitMessage(maxJobs, running), { details: { maxJobs, running: running.map((job) => job.id) } });
  }
}

/** A job could not be started (exec failed, cwd missing, cgroup refused...). */
export class SpawnError extends HephError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_SPAWN', message, options);
  }
}

/** The supervisor process died or closed the channel. */
export class SupervisorLostError extends HephError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_SUPERVISOR_LOST', message, options);
  }
}

/** A frame on the channel was malformed, too large, or answered something unexpected. */
export class ProtocolError extends HephError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_PROTOCOL', message, options);
  }
}

/** The runtime was closed; no further calls are accepted. */
export class RuntimeClosedError extends HephError {
  constructor() {
    super('ERR_RUNTIME_CLOSED', runtimeClosedMessage());
  }
}

/** An error that arrived over the channel as a plain object, rebuilt on this side. */
export class RemoteError extends HephError {}

/** Plain-object form of an error, as it crosses the channel. */
export interface SerializedError {
  code: string;
  message: string;
  name?: string;
  details?: Record<string, unknown>;
  errno?: number;
  syscall?: string;
}

export function serializeError(error: unknown): SerializedError {
  if (error instanceof HephError) {
    return { code: error.code, message: error.message, name: error.name, details: error.details };
  }
  if (error instanceof Error) {
    const native = error as Error & { code?: unknown; errno?: unknown; syscall?: unknown };
    const out: SerializedError = {
      code: typeof native.code === 'string' ? native.code : 'ERR_INTERNAL',
      message: error.message,
      name: error.name,
    };
    if (typeof native.errno === 'number') out.errno = native.errno;
    if (typeof native.syscall === 'string') out.syscall = native.syscall;
    return out;
  }
  return { code: 'ERR_INTERNAL', message: String(error) };
}

export function deserializeError(plain: SerializedError): HephError {
  const details: Record<string, unknown> = { ...(plain.details ?? {}) };
  if (plain.errno !== undefined) details.errno = plain.errno;
  if (plain.syscall !== undefined) details.syscall = plain.syscall;
  const error = new RemoteError(plain.code, plain.message, { details });
  if (plain.name) error.name = plain.name;
  return error;
}
