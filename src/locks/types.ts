/**
 * The lock table's public types: who asks (owner), what is granted (lease), the second lock layer
 * (backend), the options of a request, and the plain-data snapshot.
 */

import type { NormalizedResource } from './resource.js';

/** Who holds or wants a set of resources: free-form, with a label for messages. */
export interface LockOwner {
  /** Shown in messages, e.g. `npm run dev` or `shell: git push`. */
  label: string;
  [key: string]: unknown;
}

/** A granted request. `release()` is idempotent: a second call does nothing. */
export interface Lease {
  readonly id: number;
  readonly owner: LockOwner;
  /** The normalised set: duplicates merged (exclusive wins), sorted by resource string. */
  readonly resources: readonly NormalizedResource[];
  /** True once `release()` has been called. */
  readonly released: boolean;
  /** Releases the backend hold (first) and the local hold, and wakes the waiters it blocked. */
  release(): void;
}

/** What a backend returns for a granted set. */
export interface LockBackendHandle {
  release(): void | Promise<void>;
}

/**
 * A second lock layer asked for every set the table grants, e.g. kernel OFD locks in the
 * supervisor so that two runtimes on one machine exclude each other. `acquire` may wait; it must
 * give up (reject) when `signal` aborts. It is called in grant order, never concurrently for two
 * conflicting sets of this table.
 */
export interface LockBackend {
  acquire(
    resources: readonly NormalizedResource[],
    owner: LockOwner,
    signal: AbortSignal,
  ): Promise<LockBackendHandle>;
}

export interface LockTableOptions {
  /** Second lock layer; default none (the table alone decides). */
  backend?: LockBackend;
  /**
   * Called when a backend release fails (throws or rejects). Default: `process.emitWarning`.
   * The local hold is released regardless.
   */
  onBackendError?: (error: unknown, lease: LeaseInfo) => void;
}

/** Identifies a lease in callbacks. */
export interface LeaseInfo {
  id: number;
  owner: LockOwner;
  resources: readonly NormalizedResource[];
}

export interface AcquireOptions {
  /** Aborting rejects a waiting acquire with ERR_LOCK_CANCELLED. Default: none. */
  signal?: AbortSignal;
  /**
   * Give up after this many milliseconds (counted from the call, backend wait included) with
   * ERR_LOCK_TIMEOUT. An integer, 0 ≤ timeoutMs ≤ 2^31−1, or Infinity. Default: wait for ever.
   */
  timeoutMs?: number;
  /**
   * `false`: fail at once with ERR_LOCK_BUSY when the table cannot grant right now (like
   * tryAcquire, but it still awaits the backend). Default: true.
   */
  wait?: boolean;
}

/** Something that stands in a request's way. */
export interface LockBlocker {
  /** The other request's id (a lease id when `holding`). */
  id: number;
  owner: LockOwner;
  /** True: it holds the resource; false: it waits for it and arrived earlier. */
  holding: boolean;
  /** Its resource. */
  resource: NormalizedResource;
  /** The blocked request's resource that conflicts with it. */
  wants: NormalizedResource;
}

export interface LockHolderInfo {
  id: number;
  owner: LockOwner;
  resources: NormalizedResource[];
  /** Date.now() when granted locally. */
  since: number;
  /** True while the backend has not granted yet (held locally, lease not yet returned). */
  pending: boolean;
}

export interface LockWaiterInfo {
  id: number;
  owner: LockOwner;
  resources: NormalizedResource[];
  /** Date.now() when the request arrived. */
  since: number;
  blockedBy: LockBlocker[];
}

/** Plain data: holders in grant order, waiters in arrival order. */
export interface LockTableSnapshot {
  holders: LockHolderInfo[];
  waiters: LockWaiterInfo[];
}
