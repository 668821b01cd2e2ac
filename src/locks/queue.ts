/**
 * Who holds and who waits, and so who may be granted: all-or-nothing and fair.
 *
 * - All-or-nothing: a request holds either every resource of its set or none, so the table
 *   cannot deadlock on itself.
 * - Fair: waiting requests are served in arrival order; a request is granted only when it
 *   conflicts with no holder and with no earlier waiter. A later request that conflicts with
 *   neither is granted at once.
 * - When a holder or a waiter leaves, only the waiters that conflicted with it are re-checked.
 */

import { ANY, ConflictIndex, type Slot } from './conflict-index.js';
import type { Request } from './request.js';
import type { LockBlocker } from './types.js';

export class LockQueue {
  readonly #holders = new ConflictIndex<Request>();
  readonly #waiters = new ConflictIndex<Request>();
  /** Holders (granting or held) in grant order. */
  readonly #held = new Map<number, Request>();
  /** Waiters in arrival order. */
  readonly #queue = new Map<number, Request>();

  /** Holders (granting or held) in grant order. */
  get holders(): IterableIterator<Request> {
    return this.#held.values();
  }

  /** Waiters in arrival order. */
  get waiters(): IterableIterator<Request> {
    return this.#queue.values();
  }

  get holding(): number {
    return this.#held.size;
  }

  get waiting(): number {
    return this.#queue.size;
  }

  /** Whether `req` conflicts with no holder and no earlier waiter. */
  grantable(req: Request): boolean {
    for (const res of req.resources) {
      if (this.#holders.scan(res, ANY) !== undefined) return false;
      if (this.#waiters.scan(res, ANY, req.id) !== undefined) return false;
    }
    return true;
  }

  /** Holds a request locally (state `granting`): from now on it blocks others as a holder. */
  hold(req: Request): void {
    req.state = 'granting';
    req.since = Date.now();
    this.#held.set(req.id, req);
    this.#holders.add(req);
  }

  /** Puts a request at the back of the queue. */
  enqueue(req: Request): void {
    this.#queue.set(req.id, req);
    this.#waiters.add(req);
  }

  /** Removes a holder; returns the waiters it alone blocked, now held (state `granting`). */
  dropHolder(req: Request): Request[] {
    this.#held.delete(req.id);
    this.#holders.remove(req);
    return this.#wake(req);
  }

  /** Removes a waiter; returns the later waiters it alone blocked, now held (state `granting`). */
  dropWaiter(req: Request): Request[] {
    this.#unqueue(req);
    return this.#wake(req);
  }

  #unqueue(req: Request): void {
    this.#queue.delete(req.id);
    this.#waiters.remove(req);
  }

  /**
   * Only waiters that conflicted with `removed` can have become grantable (every other blocker is
   * still there, and a waiter granted in this pass still blocks as a holder what it blocked as a
   * waiter), so only they are re-checked, in arrival order.
   */
  #wake(removed: Request): Request[] {
    if (this.#waiters.empty) return [];
    const candidates = new Set<Request>();
    for (const res of removed.resources) this.#waiters.collectCandidates(res, candidates);
    if (candidates.size === 0) return [];
    const ordered = [...candidates].sort((x, y) => x.id - y.id);
    const granted: Request[] = [];
    for (const req of ordered) {
      if (req.state !== 'waiting' || !this.grantable(req)) continue;
      this.#unqueue(req);
      this.hold(req);
      granted.push(req);
    }
    return granted;
  }

  /** Holders and earlier waiters that conflict with `req`, one entry per conflicting pair. */
  blockers(req: Request): LockBlocker[] {
    const out: LockBlocker[] = [];
    for (const wants of req.resources) {
      const collect =
        (holding: boolean) =>
        (slot: Slot<Request>): boolean => {
          if (slot.req !== req) {
            const other = slot.req;
            out.push({ id: other.id, owner: { ...other.owner }, holding, resource: { ...slot.res }, wants: { ...wants } });
          }
          return false;
        };
      this.#holders.scan(wants, collect(true));
      this.#waiters.scan(wants, collect(false), req.id);
    }
    return out;
  }
}
