/**
 * The errors a lock request can end with: the sentence from src/wording/, and the same facts
 * as plain-data `details` (they cross the supervisor channel through serializeError).
 */

import {
  LOCK_SYNC_UNAVAILABLE,
  lockBackendTimeoutMessage,
  lockBusyMessage,
  lockCancelledMessage,
  lockTimeoutMessage,
} from '../wording/index.js';
import type { LockRequestFacts } from '../facts.js';
import { LockBusyError, LockCancelledError, LockSyncUnavailableError, LockTimeoutError } from '../protocol/errors.js';
import type { NormalizedResource } from './resource.js';
import type { LockBlocker, LockOwner } from './types.js';

/** What the errors need of a request. */
interface Refused extends LockRequestFacts {
  readonly owner: LockOwner;
  readonly resources: readonly NormalizedResource[];
}

function plainBlockers(blockers: readonly LockBlocker[]): Record<string, unknown>[] {
  return blockers.map((b) => ({
    id: b.id,
    owner: b.owner,
    holding: b.holding,
    resource: b.resource.resource,
    mode: b.resource.mode,
    wants: b.wants.resource,
  }));
}

/** The request's plain facts, with its blockers when they are part of the story. */
function requestDetails(req: Refused, blockers?: readonly LockBlocker[]): Record<string, unknown> {
  const details: Record<string, unknown> = { owner: req.owner, resources: req.resources.map((r) => r.resource) };
  if (blockers !== undefined) details['blockers'] = plainBlockers(blockers);
  return details;
}

/** Ids of the jobs among the holders (owners with a numeric `jobId`), so a message can say how to stop them. */
function holdingJobIds(blockers: readonly LockBlocker[]): string[] {
  const ids = new Set<string>();
  for (const b of blockers) {
    const id = b.owner['jobId'];
    if (b.holding && (typeof id === 'number' || (typeof id === 'string' && /^\d+$/.test(id)))) ids.add(String(id));
  }
  return [...ids];
}

export function timeoutError(req: Refused, ms: number, blockers: LockBlocker[]): LockTimeoutError {
  return new LockTimeoutError(lockTimeoutMessage(req, ms, blockers, holdingJobIds(blockers)), {
    details: { timeoutMs: ms, ...requestDetails(req, blockers) },
  });
}

export function backendTimeoutError(req: Refused, ms: number): LockTimeoutError {
  return new LockTimeoutError(lockBackendTimeoutMessage(req, ms), {
    details: { timeoutMs: ms, ...requestDetails(req), backend: true },
  });
}

export function cancelledError(req: Refused, signal: AbortSignal, blockers: LockBlocker[], whileBackend = false): LockCancelledError {
  return new LockCancelledError(lockCancelledMessage(req, blockers, whileBackend), {
    cause: signal.reason,
    details: requestDetails(req, blockers),
  });
}

export function busyError(req: Refused, blockers: LockBlocker[]): LockBusyError {
  return new LockBusyError(lockBusyMessage(req, blockers, holdingJobIds(blockers)), {
    details: requestDetails(req, blockers),
  });
}

export function syncUnavailableError(): LockSyncUnavailableError {
  return new LockSyncUnavailableError(LOCK_SYNC_UNAVAILABLE);
}
