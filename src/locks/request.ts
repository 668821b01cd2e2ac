/**
 * One lock request's life and its lease. A request is `waiting` in the queue, `granting` while it
 * holds locally and the backend has not granted yet, `held` once its lease is out, and `done`
 * when released, failed, cancelled or timed out. It settles its caller's promise exactly once.
 */

import type { Indexed } from './conflict-index.js';
import type { NormalizedResource } from './resource.js';
import type { Lease, LockBackendHandle, LockOwner } from './types.js';

export type RequestState = 'waiting' | 'granting' | 'held' | 'done';

export class Request implements Indexed {
  state: RequestState = 'waiting';
  /** Date.now() at arrival; reset when granted locally. */
  since = Date.now();
  /** The wait allowed, for the timeout message; set when armed. */
  timeoutMs: number | undefined;
  /** Set while the backend is asked, so a cancel or timeout can withdraw the ask. */
  backendAbort: AbortController | undefined;
  /** What the backend granted; released before the local hold. */
  backendHandle: LockBackendHandle | undefined;
  #resolve: ((lease: Lease) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #signal: AbortSignal | undefined;
  #onAbort: (() => void) | undefined;

  constructor(
    readonly id: number,
    readonly owner: LockOwner,
    readonly resources: readonly NormalizedResource[],
  ) {}

  /**
   * The caller's promise, for a request that cannot be granted synchronously. `onTimeout` fires
   * after `timeoutMs` (none for undefined or Infinity), `onAbort` when `signal` aborts; both are
   * disarmed once the request settles.
   */
  arm(
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
    onTimeout: () => void,
    onAbort: (signal: AbortSignal) => void,
  ): Promise<Lease> {
    const promise = new Promise<Lease>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.timeoutMs = timeoutMs;
    if (timeoutMs !== undefined && timeoutMs !== Infinity) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        onTimeout();
      }, timeoutMs);
    }
    if (signal !== undefined) {
      this.#signal = signal;
      this.#onAbort = () => {
        if (this.#signal !== undefined) onAbort(this.#signal);
      };
      signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    return promise;
  }

  /** Fully granted: state `held`, the lease made and handed to the caller's promise (if any). */
  grant(release: (req: Request) => void): Lease {
    this.state = 'held';
    const lease = new LeaseImpl(this, release);
    this.#disarm();
    this.#resolve?.(lease);
    this.#resolve = this.#reject = undefined;
    return lease;
  }

  /** Ends the request with `error` (state `done`), rejecting the caller's promise (if any). */
  fail(error: unknown): void {
    this.state = 'done';
    this.#disarm();
    this.#reject?.(error);
    this.#resolve = this.#reject = undefined;
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#onAbort !== undefined) this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#onAbort = undefined;
    this.#signal = undefined;
  }
}

class LeaseImpl implements Lease {
  readonly id: number;
  readonly owner: LockOwner;
  readonly resources: readonly NormalizedResource[];
  readonly #release: () => void;
  #released = false;

  constructor(req: Request, release: (req: Request) => void) {
    this.id = req.id;
    this.owner = req.owner;
    this.resources = req.resources;
    this.#release = () => release(req);
  }

  get released(): boolean {
    return this.#released;
  }

  readonly release = (): void => {
    if (this.#released) return;
    this.#released = true;
    this.#release();
  };
}
