/**
 * Calling the second lock layer (LockBackend) so that nothing it does can break the table: a
 * synchronous throw from `acquire` becomes a rejection, and a failing `release` (thrown or
 * rejected) goes to the table's reporter, whose own failure is swallowed.
 */

import type { NormalizedResource } from './resource.js';
import type { LockBackend, LockBackendHandle, LockOwner } from './types.js';

export function askBackend(
  backend: LockBackend,
  resources: readonly NormalizedResource[],
  owner: LockOwner,
  signal: AbortSignal,
): Promise<LockBackendHandle> {
  try {
    return Promise.resolve(backend.acquire(resources, owner, signal));
  } catch (error) {
    return Promise.reject(error);
  }
}

export function releaseBackend(handle: LockBackendHandle, report: (error: unknown) => void): void {
  const safeReport = (error: unknown): void => {
    try {
      report(error);
    } catch {
      // A failing error reporter must not break the table.
    }
  };
  try {
    const result = handle.release();
    if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
      (result as Promise<void>).then(undefined, safeReport);
    }
  } catch (error) {
    safeReport(error);
  }
}
