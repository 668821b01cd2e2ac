/**
 * Checks what a caller hands the lock table (the backend option, an owner, acquire options), so
 * the table itself only ever sees valid values. Refusals are InvalidInputError (ERR_INVALID_INPUT)
 * naming the option, saying what is accepted, and showing what was received.
 */

import { InvalidInputError } from '../protocol/errors.js';
import { checkInteger, describeValue } from '../protocol/describe.js';
import {
  ACQUIRE_TIMEOUT_OPTION,
  LOCK_BACKEND_OPTION_REFUSED,
  acquireOptionMessage,
  acquireOptionsNotObjectMessage,
  lockOwnerLabelMessage,
  lockOwnerNotObjectMessage,
} from '../wording/index.js';
import type { AcquireOptions, LockBackend, LockOwner } from './types.js';

/** Largest delay setTimeout honours (ms); beyond it Node fires after 1 ms. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export function checkBackend(backend: LockBackend | undefined): LockBackend | undefined {
  if (backend !== undefined && typeof backend?.acquire !== 'function') {
    throw new InvalidInputError(LOCK_BACKEND_OPTION_REFUSED, { option: 'backend' });
  }
  return backend;
}

export function checkOwner(owner: unknown): LockOwner {
  if (owner === null || typeof owner !== 'object' || Array.isArray(owner)) {
    throw new InvalidInputError(lockOwnerNotObjectMessage(describeValue(owner)), { option: 'owner' });
  }
  const label = (owner as { label?: unknown }).label;
  if (typeof label !== 'string' || label.length === 0) {
    throw new InvalidInputError(lockOwnerLabelMessage(describeValue(label)), { option: 'owner.label' });
  }
  return owner as LockOwner;
}

export function checkOptions(options: AcquireOptions): { signal: AbortSignal | undefined; timeoutMs: number | undefined } {
  if (options === null || typeof options !== 'object') {
    throw new InvalidInputError(acquireOptionsNotObjectMessage(describeValue(options)), { option: 'options' });
  }
  const { signal, timeoutMs, wait } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidInputError(acquireOptionMessage('signal', describeValue(signal)), { option: 'signal' });
  }
  const checkedTimeoutMs = timeoutMs === undefined ? undefined : checkTimeout(timeoutMs);
  if (wait !== undefined && typeof wait !== 'boolean') {
    throw new InvalidInputError(acquireOptionMessage('wait', describeValue(wait)), { option: 'wait' });
  }
  return { signal, timeoutMs: checkedTimeoutMs };
}

/** Infinity (no timer), or a whole number of milliseconds setTimeout can honour. */
function checkTimeout(timeoutMs: unknown): number {
  if (timeoutMs === Infinity) return Infinity;
  try {
    return checkInteger(ACQUIRE_TIMEOUT_OPTION, timeoutMs, 0, MAX_TIMEOUT_MS);
  } catch (error) {
    // The table's callers catch ERR_INVALID_INPUT; checkInteger's TypeError/RangeError carry the sentence.
    throw new InvalidInputError((error as Error).message, { option: 'timeoutMs', received: String(timeoutMs) });
  }
}
