/**
 * The error hierarchy, with one stable `code` per class and one code-to-class registry, so an
 * error thrown in the supervisor arrives in the runtime as the same class with the same code and
 * details. Messages here are short statements of fact for the engineer who catches them; what a
 * model reads about an error is worded from its code and details in src/wording/.
 */

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

/**
 * A class of errors with one code, made from a message (and a cause, details): most classes here
 * differ only in their code and the base they extend.
 */
function withCode(code: string, Base: typeof HephError) {
  return class extends Base {
    constructor(message: string, options: HephErrorOptions = {}) {
      super(code, message, options);
    }
  };
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
    const list = known.length === 0 ? 'there are no jobs' : `known jobs: ${known.join(', ')}`;
    super('ERR_JOB_NOT_FOUND', `no job ${String(id)}; ${list}`, { details: { id, known: [...known] } });
  }
}

/** Too many jobs run at once. */
export class JobLimitError extends HephError {
  constructor(maxJobs: number, running: readonly { id: number; command: string }[]) {
    const names = running.map((job) => `job ${job.id} (${job.command})`).join(', ');
    super('ERR_JOB_LIMIT', `${running.length} of ${maxJobs} jobs are running, the most allowed at once: ${names}`, {
      details: { maxJobs, running: running.map(({ id, command }) => ({ id, command })) },
    });
  }
}

/** A job could not be started (exec failed, cwd missing, cgroup refused...). */
export class SpawnError extends withCode('ERR_SPAWN', HephError) {}

/** The supervisor process died or closed the channel. */
export class SupervisorLostError extends withCode('ERR_SUPERVISOR_LOST', HephError) {}

/** A frame on the channel was malformed, too large, or answered something unexpected. */
export class ProtocolError extends withCode('ERR_PROTOCOL', HephError) {}

/** The runtime was closed; no further calls are accepted. */
export class RuntimeClosedError extends HephError {
  constructor() {
    super('ERR_RUNTIME_CLOSED', 'the job runtime is closed; start a new one with JobRuntime.start()');
  }
}

/** Base class of every lock error, so a caller can catch them as a group. */
export class LockError extends HephError {}

/** A resource string (or request) that is not `kind:value`, or a rule template that cannot be expanded. */
export class BadResourceError extends withCode('ERR_BAD_RESOURCE', LockError) {}

/** A rule set or a rule template is malformed, or names a variable the call does not provide. */
export class BadLockRuleError extends withCode('ERR_BAD_LOCK_RULE', LockError) {}

/** `acquire` gave up after `timeoutMs`; the message names the resources and who holds them. */
export class LockTimeoutError extends withCode('ERR_LOCK_TIMEOUT', LockError) {}

/** `acquire` was aborted through its AbortSignal; `cause` is the signal's reason. */
export class LockCancelledError extends withCode('ERR_LOCK_CANCELLED', LockError) {}

/** `tryAcquire` (or `acquire` with `wait: false`) could not be granted right now. */
export class LockBusyError extends withCode('ERR_LOCK_BUSY', LockError) {}

/** `tryAcquire` was called on a table whose backend can only grant asynchronously. */
export class LockSyncUnavailableError extends withCode('ERR_LOCK_SYNC_UNAVAILABLE', LockError) {}

/** The lock vault has no room to keep a lease through a supervisor's crash: the lease is refused. */
export class LockVaultFullError extends withCode('ERR_LOCK_VAULT_FULL', LockError) {}

/** An error that arrived over the channel with a code no class here has (a native errno, say). */
export class RemoteError extends HephError {}

/** Every code, and the class an error with that code is. */
export const ERROR_CLASSES = {
  ERR_INVALID_INPUT: InvalidInputError,
  ERR_JOB_NOT_FOUND: JobNotFoundError,
  ERR_JOB_LIMIT: JobLimitError,
  ERR_SPAWN: SpawnError,
  ERR_SUPERVISOR_LOST: SupervisorLostError,
  ERR_PROTOCOL: ProtocolError,
  ERR_RUNTIME_CLOSED: RuntimeClosedError,
  ERR_BAD_RESOURCE: BadResourceError,
  ERR_BAD_LOCK_RULE: BadLockRuleError,
  ERR_LOCK_TIMEOUT: LockTimeoutError,
  ERR_LOCK_CANCELLED: LockCancelledError,
  ERR_LOCK_BUSY: LockBusyError,
  ERR_LOCK_SYNC_UNAVAILABLE: LockSyncUnavailableError,
  ERR_LOCK_VAULT_FULL: LockVaultFullError,
} as const satisfies Record<string, abstract new (...args: never[]) => HephError>;

export type ErrorCode = keyof typeof ERROR_CLASSES;

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

function isKnownCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CLASSES, code);
}

/** The error as its own class again (by its code), with its message and details; RemoteError for an unknown code. */
export function deserializeError(plain: SerializedError): HephError {
  const details: Record<string, unknown> = { ...(plain.details ?? {}) };
  if (plain.errno !== undefined) details.errno = plain.errno;
  if (plain.syscall !== undefined) details.syscall = plain.syscall;
  const error = new RemoteError(plain.code, plain.message, { details });
  // Not constructed through the class's own constructor (it may take facts, not a message): the
  // message and details are the sender's, the prototype makes `instanceof` and the name right.
  if (isKnownCode(plain.code)) Object.setPrototypeOf(error, ERROR_CLASSES[plain.code].prototype);
  error.name = plain.name ?? (isKnownCode(plain.code) ? ERROR_CLASSES[plain.code].name : 'RemoteError');
  return error;
}
