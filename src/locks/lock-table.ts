/**
 * The in-process resource-lock table (SPEC section 6): the public class, and the transitions of
 * a request between the queue (queue.ts, all-or-nothing and fair), its own life (request.ts), and
 * an optional backend.
 *
 * - Cancel (AbortSignal) and timeout remove the request and re-evaluate the waiters behind it.
 * - An optional backend (the supervisor's kernel OFD locks) is asked for every granted set,
 *   in grant order, while the set is already held locally; the lease is returned only after the
 *   backend grants too.
 */

import { lockBackendReleaseFailedWarning } from '../wording/index.js';
import { checkBackend, checkOptions, checkOwner } from './acquire-input.js';
import { askBackend, releaseBackend } from './backend.js';
import { backendTimeoutError, busyError, cancelledError, syncUnavailableError, timeoutError } from './failures.js';
import { LockQueue } from './queue.js';
import { Request } from './request.js';
import { normalizeResources, type ResourceSpec } from './resource.js';
import type {
  AcquireOptions,
  Lease,
  LockBackend,
  LockBackendHandle,
  LockHolderInfo,
  LockOwner,
  LockTableOptions,
  LockTableSnapshot,
  LockWaiterInfo,
} from './types.js';

/** The table. One per runtime; the host's own actions use the same instance. */
export class LockTable {
  readonly #queue = new LockQueue();
  readonly #backend: LockBackend | undefined;
  readonly #onBackendError: NonNullable<LockTableOptions['onBackendError']>;
  #nextId = 1;

  constructor(options: LockTableOptions = {}) {
    this.#backend = checkBackend(options.backend);
    this.#onBackendError =
      options.onBackendError ??
      ((error, lease) => {
        process.emitWarning(
          lockBackendReleaseFailedWarning(lease.id, lease.owner, error instanceof Error ? error.message : String(error)),
          { code: 'HEPH_LOCK_BACKEND_RELEASE' },
        );
      });
  }

  /** Number of granted requests (including those still waiting for the backend). */
  get holding(): number {
    return this.#queue.holding;
  }

  /** Number of waiting requests. */
  get waiting(): number {
    return this.#queue.waiting;
  }

  /**
   * Waits until every resource of the set can be held, holds them all at once, and returns the
   * lease. Rejects with ERR_BAD_RESOURCE (bad request), ERR_INVALID_INPUT (bad owner or option),
   * ERR_LOCK_TIMEOUT, ERR_LOCK_CANCELLED, ERR_LOCK_BUSY (`wait: false`), or the backend's error.
   */
  acquire(owner: LockOwner, resources: readonly ResourceSpec[], options: AcquireOptions = {}): Promise<Lease> {
    let req: Request;
    let signal: AbortSignal | undefined;
    let timeoutMs: number | undefined;
    try {
      ({ signal, timeoutMs } = checkOptions(options));
      req = this.#request(owner, resources);
    } catch (error) {
      return Promise.reject(error);
    }
    if (signal?.aborted) return Promise.reject(cancelledError(req, signal, []));

    const grantable = this.#queue.grantable(req);
    if (grantable && (this.#backend === undefined || req.resources.length === 0)) {
      this.#queue.hold(req);
      return Promise.resolve(this.#grant(req));
    }
    if (!grantable && options.wait === false) return Promise.reject(busyError(req, this.#queue.blockers(req)));

    const promise = req.arm(
      timeoutMs,
      signal,
      () => this.#onTimeout(req),
      (aborted) => this.#onAbort(req, aborted),
    );
    if (grantable) {
      this.#queue.hold(req);
      this.#startBackend(req);
    } else {
      this.#queue.enqueue(req);
    }
    return promise;
  }

  /**
   * Holds the set now or throws ERR_LOCK_BUSY naming what is in the way: a holder, or an earlier
   * waiter it conflicts with (fairness). Throws ERR_LOCK_SYNC_UNAVAILABLE on a table with a
   * backend; use `acquire(owner, resources, { wait: false })` there.
   */
  tryAcquire(owner: LockOwner, resources: readonly ResourceSpec[]): Lease {
    const req = this.#request(owner, resources);
    if (this.#backend !== undefined) throw syncUnavailableError();
    if (!this.#queue.grantable(req)) throw busyError(req, this.#queue.blockers(req));
    this.#queue.hold(req);
    return this.#grant(req);
  }

  /** Who holds what and who waits for what, in order; plain data (copies). */
  snapshot(): LockTableSnapshot {
    const holders: LockHolderInfo[] = [...this.#queue.holders].map((req) => ({
      ...plainRequest(req),
      pending: req.state === 'granting',
    }));
    const waiters: LockWaiterInfo[] = [...this.#queue.waiters].map((req) => ({
      ...plainRequest(req),
      blockedBy: this.#queue.blockers(req),
    }));
    return { holders, waiters };
  }

  // ---- state transitions -------------------------------------------------------------------

  #request(owner: LockOwner, resources: readonly ResourceSpec[]): Request {
    return new Request(this.#nextId++, checkOwner(owner), Object.freeze(normalizeResources(resources)));
  }

  /** The request is fully granted: its lease, released through `#release`. */
  #grant(req: Request): Lease {
    return req.grant((r) => this.#release(r));
  }

  /** Asks the backend for a request held locally (state granting); without one, grants at once. */
  #startBackend(req: Request): void {
    const backend = this.#backend;
    if (backend === undefined || req.resources.length === 0) {
      this.#grant(req);
      return;
    }
    const controller = new AbortController();
    req.backendAbort = controller;
    askBackend(backend, req.resources, req.owner, controller.signal).then(
      (handle) => {
        if (req.state !== 'granting') {
          // Cancelled or timed out meanwhile: the caller has its error; give the locks back.
          this.#releaseBackend(req, handle);
          return;
        }
        req.backendHandle = handle;
        req.backendAbort = undefined;
        this.#grant(req);
      },
      (error: unknown) => {
        if (req.state !== 'granting') return;
        req.backendAbort = undefined;
        this.#end(req, error, this.#queue.dropHolder(req));
      },
    );
  }

  #releaseBackend(req: Request, handle: LockBackendHandle): void {
    releaseBackend(handle, (error) => this.#onBackendError(error, { id: req.id, owner: req.owner, resources: req.resources }));
  }

  /** Lease.release(): the backend first (so its release is on the wire before any new acquire). */
  #release(req: Request): void {
    if (req.state !== 'held') return;
    req.state = 'done';
    const handle = req.backendHandle;
    req.backendHandle = undefined;
    if (handle !== undefined) this.#releaseBackend(req, handle);
    this.#startAll(this.#queue.dropHolder(req));
  }

  /**
   * Ends a request that left the queue or its hold with `error`. The waiters its leaving made
   * grantable (`granted`) are handed to the backend first, as when a lease is released.
   */
  #end(req: Request, error: unknown, granted: Request[]): void {
    req.state = 'done';
    this.#startAll(granted);
    req.fail(error);
  }

  /**
   * Backends are called after the queue's pass, so a backend that calls back into the table finds
   * it consistent. A request cancelled by an earlier one's backend call is skipped.
   */
  #startAll(granted: readonly Request[]): void {
    for (const req of granted) if (req.state === 'granting') this.#startBackend(req);
  }

  #onTimeout(req: Request): void {
    const ms = req.timeoutMs ?? 0;
    if (req.state === 'waiting') {
      const error = timeoutError(req, ms, this.#queue.blockers(req));
      this.#end(req, error, this.#queue.dropWaiter(req));
    } else if (req.state === 'granting') {
      this.#abortGranting(req, backendTimeoutError(req, ms));
    }
  }

  #onAbort(req: Request, signal: AbortSignal): void {
    if (req.state === 'waiting') {
      const error = cancelledError(req, signal, this.#queue.blockers(req));
      this.#end(req, error, this.#queue.dropWaiter(req));
    } else if (req.state === 'granting') {
      this.#abortGranting(req, cancelledError(req, signal, [], true));
    }
  }

  /** Cancel or timeout while the backend is asked: withdraw the ask, drop the local hold. */
  #abortGranting(req: Request, error: Error): void {
    req.state = 'done';
    req.backendAbort?.abort(error);
    req.backendAbort = undefined;
    this.#end(req, error, this.#queue.dropHolder(req));
  }
}

/** What holders and waiters share in a snapshot, copied so the caller cannot reach the table's state. */
function plainRequest(req: Request): Omit<LockHolderInfo, 'pending'> {
  return { id: req.id, owner: { ...req.owner }, resources: req.resources.map((r) => ({ ...r })), since: req.since };
}
