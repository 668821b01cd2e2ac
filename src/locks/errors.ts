/**
 * Errors of the resource-lock table. All are HephErrors with a stable `code` and plain-data
 * `details` (they cross the supervisor channel through serializeError). The wording that a person
 * or a model reads is built in src/wording.ts and passed in as `message`.
 */

import { HephError, type HephErrorOptions } from '../errors.js';

/** Base class of every lock error, so a caller can catch them as a group. */
export class LockError extends HephError {}

/**
 * A resource string (or request) that is not `kind:value`, or a rule template that cannot be
 * expanded. The message says what was wrong, what is accepted, and shows what was received.
 */
export class BadResourceError extends LockError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_BAD_RESOURCE', message, options);
  }
}

/** A rule set or a rule template is malformed, or names a variable the call does not provide. */
export class BadLockRuleError extends LockError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_BAD_LOCK_RULE', message, options);
  }
}

/** `acquire` gave up after `timeoutMs`; the message names the resources and who holds them. */
export class LockTimeoutError extends LockError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_LOCK_TIMEOUT', message, options);
  }
}

/** `acquire` was aborted through its AbortSignal; `cause` is the signal's reason. */
export class LockCancelledError extends LockError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_LOCK_CANCELLED', message, options);
  }
}

/** `tryAcquire` (or `acquire` with `wait: false`) could not be granted right now. */
export class LockBusyError extends LockError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_LOCK_BUSY', message, options);
  }
}

/** `tryAcquire` was called on a table whose backend can only grant asynchronously. */
export class LockSyncUnavailableError extends LockError {
  constructor(message: string, options: HephErrorOptions = {}) {
    super('ERR_LOCK_SYNC_UNAVAILABLE', message, options);
  }
}
