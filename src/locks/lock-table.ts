/**
 * The in-process resource-lock table (SPEC section 6).
 *
 * - All-or-nothing: a request holds either every resource of its set or none, so the table
 *   cannot deadlock on itself.
 * - Fair: waiting requests are served in arrival order; a request is granted only when it
 *   conflicts with no holder and with no earlier waiter. A later request that conflicts with
 *   neither is granted at once.
 * - Cancel (AbortSignal) and timeout remove the request and re-evaluate the waiters behind it.
 * - An optional backend (the supervisor's kernel OFD locks) is asked for every granted set,
 *   in grant order, while the set is already held locally; the lease is returned only after the
 *   backend grants too.
 *
 * Conflict checks go through two indexes (holders, waiters) keyed by resource, with `path:`
 * ancestors indexed too, so a check costs O(resources × path depth), not O(holders + waiters).
 * A release re-checks only the waiters that conflicted with what was released.
 */

import { InvalidInputError } from '../protocol/errors.js';
import {
  LockBusyError,
  LockCancelledError,
  LockSyncUnavailableError,
  LockTimeoutError,
} from '../protocol/errors.js';
import {
  PATH_KIND,
  formatResource,
  normalizeResources,
  pathAncestors,
  type NormalizedResource,
  type ResourceSpec,
} from './resource.js';

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
   * ERR_LOCK_TIMEOUT. 0 ≤ timeoutMs ≤ 2^31−1, or Infinity. Default: wait for ever.
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

/** Blockers named in one message; a long queue would otherwise make a message of thousands of lines. */
const MAX_BLOCKERS_SHOWN = 8;

/** Largest delay setTimeout honours (ms); beyond it Node fires after 1 ms. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

type State = 'waiting' | 'granting' | 'held' | 'done';

class Request {
  state: State = 'waiting';
  since = Date.now();
  timeoutMs: number | undefined;
  resolve: ((lease: Lease) => void) | undefined;
  reject: ((error: unknown) => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  backendAbort: AbortController | undefined;
  backendHandle: LockBackendHandle | undefined;
  lease: LeaseImpl | undefined;
  constructor(
    readonly id: number,
    readonly owner: LockOwner,
    readonly resources: readonly NormalizedResource[],
  ) {}
}

interface Slot {
  readonly req: Request;
  readonly res: NormalizedResource;
}

/**
 * Slots by resource. `exact*` by `kind:value`; `below*` by every strict ancestor of a `path:`
 * value, so "what is held below /a" is one lookup. Sets keep insertion order, which for the
 * waiter index is arrival order (see `scan`'s `beforeId`).
 */
class ResourceIndex {
  private readonly exactEx = new Map<string, Set<Slot>>();
  private readonly exactSh = new Map<string, Set<Slot>>();
  private readonly belowEx = new Map<string, Set<Slot>>();
  private readonly belowSh = new Map<string, Set<Slot>>();
  private readonly slots = new Map<Request, Slot[]>();

  add(req: Request): void {
    const slots: Slot[] = [];
    for (const res of req.resources) {
      const slot: Slot = { req, res };
      slots.push(slot);
      const shared = res.mode === 'shared';
      put(shared ? this.exactSh : this.exactEx, res.resource, slot);
      if (res.kind === PATH_KIND) {
        const below = shared ? this.belowSh : this.belowEx;
        for (const anc of pathAncestors(res.value)) put(below, anc, slot);
      }
    }
    this.slots.set(req, slots);
  }

  remove(req: Request): void {
    const slots = this.slots.get(req);
    if (slots === undefined) return;
    this.slots.delete(req);
    for (const slot of slots) {
      const res = slot.res;
      const shared = res.mode === 'shared';
      take(shared ? this.exactSh : this.exactEx, res.resource, slot);
      if (res.kind === PATH_KIND) {
        const below = shared ? this.belowSh : this.belowEx;
        for (const anc of pathAncestors(res.value)) take(below, anc, slot);
      }
    }
  }

  get empty(): boolean {
    return this.slots.size === 0;
  }

  /**
   * Visits the slots that conflict with `res` (overlap, and not both shared) until `visit`
   * returns true; returns that slot. With `beforeId`, only slots of requests with a smaller id
   * are visited; valid for the waiter index only, whose sets are in id order.
   */
  scan(res: NormalizedResource, visit: (slot: Slot) => boolean, beforeId = Infinity): Slot | undefined {
    const exclusive = res.mode === 'exclusive';
    let hit = visitSet(this.exactEx.get(res.resource), visit, beforeId);
    if (hit === undefined && exclusive) hit = visitSet(this.exactSh.get(res.resource), visit, beforeId);
    if (hit !== undefined || res.kind !== PATH_KIND) return hit;
    // Below res (descendants) ...
    hit = visitSet(this.belowEx.get(res.value), visit, beforeId);
    if (hit === undefined && exclusive) hit = visitSet(this.belowSh.get(res.value), visit, beforeId);
    // ... and above it (ancestors, which cover res).
    if (hit !== undefined) return hit;
    for (const anc of pathAncestors(res.value)) {
      const key = `${PATH_KIND}:${anc}`;
      hit = visitSet(this.exactEx.get(key), visit, beforeId);
      if (hit === undefined && exclusive) hit = visitSet(this.exactSh.get(key), visit, beforeId);
      if (hit !== undefined) return hit;
    }
    return undefined;
  }

  /**
   * Adds to `out` every waiter that conflicts with `res` and might now be grantable, skipping
   * those that are certainly still blocked: a waiter behind an earlier exclusive waiter on its own
   * exact resource conflicts with that one whatever happens in this pass. This keeps a release
   * O(1) for a long queue on one resource instead of re-checking the whole queue.
   * Valid for the waiter index only (sets in id order).
   */
  collectCandidates(res: NormalizedResource, out: Set<Request>): void {
    const exclusive = res.mode === 'exclusive';
    this.collectExact(res.resource, exclusive, out);
    if (res.kind !== PATH_KIND) return;
    const below = [this.belowEx.get(res.value), exclusive ? this.belowSh.get(res.value) : undefined];
    for (const set of below) {
      if (set === undefined) continue;
      for (const slot of set) {
        const head = firstOf(this.exactEx.get(slot.res.resource));
        if (head === undefined || head.req.id >= slot.req.id) out.add(slot.req);
      }
    }
    for (const anc of pathAncestors(res.value)) this.collectExact(`${PATH_KIND}:${anc}`, exclusive, out);
  }

  private collectExact(key: string, withShared: boolean, out: Set<Request>): void {
    const head = firstOf(this.exactEx.get(key));
    if (head !== undefined) out.add(head.req);
    if (!withShared) return;
    const shared = this.exactSh.get(key);
    if (shared === undefined) return;
    const limit = head === undefined ? Infinity : head.req.id;
    for (const slot of shared) {
      if (slot.req.id > limit) break;
      out.add(slot.req);
    }
  }
}

function firstOf(set: Set<Slot> | undefined): Slot | undefined {
  if (set === undefined) return undefined;
  for (const slot of set) return slot;
  return undefined;
}

function put(map: Map<string, Set<Slot>>, key: string, slot: Slot): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([slot]));
  else set.add(slot);
}

function take(map: Map<string, Set<Slot>>, key: string, slot: Slot): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(slot);
  if (set.size === 0) map.delete(key);
}

function visitSet(set: Set<Slot> | undefined, visit: (slot: Slot) => boolean, beforeId: number): Slot | undefined {
  if (set === undefined) return undefined;
  for (const slot of set) {
    if (slot.req.id >= beforeId) break;
    if (visit(slot)) return slot;
  }
  return undefined;
}

const ANY = (): boolean => true;

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

/** The table. One per runtime; the host's own actions use the same instance. */
export class LockTable {
  readonly #holders = new ResourceIndex();
  readonly #waiters = new ResourceIndex();
  /** Holders (granting or held) in grant order. */
  readonly #held = new Map<number, Request>();
  /** Waiters in arrival order. */
  readonly #queue = new Map<number, Request>();
  readonly #backend: LockBackend | undefined;
  readonly #onBackendError: NonNullable<LockTableOptions['onBackendError']>;
  #nextId = 1;

  constructor(options: LockTableOptions = {}) {
    if (options.backend !== undefined && typeof options.backend?.acquire !== 'function') {
      throw new InvalidInputError('LockTable option "backend" must have an acquire(resources, owner, signal) method', {
        option: 'backend',
      });
    }
    this.#backend = options.backend;
    this.#onBackendError =
      options.onBackendError ??
      ((error, lease) => {
        process.emitWarning(
          `heph-jobs: releasing the backend locks of lease ${lease.id} (${describeOwner(lease.owner)}) failed: ` +
            (error instanceof Error ? error.message : String(error)),
          { code: 'HEPH_LOCK_BACKEND_RELEASE' },
        );
      });
  }

  /** Number of granted requests (including those still waiting for the backend). */
  get holding(): number {
    return this.#held.size;
  }

  /** Number of waiting requests. */
  get waiting(): number {
    return this.#queue.size;
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
      req = new Request(this.#nextId++, checkOwner(owner), Object.freeze(normalizeResources(resources)));
    } catch (error) {
      return Promise.reject(error);
    }
    if (signal?.aborted) return Promise.reject(cancelledError(req, signal, []));

    const grantable = this.#grantable(req);
    if (grantable && (this.#backend === undefined || req.resources.length === 0)) {
      this.#hold(req);
      return Promise.resolve(this.#complete(req));
    }
    if (!grantable && options.wait === false) return Promise.reject(busyError(req, this.#blockers(req)));

    const promise = new Promise<Lease>((resolve, reject) => {
      req.resolve = resolve;
      req.reject = reject;
    });
    req.timeoutMs = timeoutMs;
    if (timeoutMs !== undefined && timeoutMs !== Infinity) {
      req.timer = setTimeout(() => this.#onTimeout(req), timeoutMs);
    }
    if (signal !== undefined) {
      req.signal = signal;
      req.onAbort = () => this.#onAbort(req);
      signal.addEventListener('abort', req.onAbort, { once: true });
    }
    if (grantable) {
      this.#hold(req);
      this.#startBackend(req);
    } else {
      this.#queue.set(req.id, req);
      this.#waiters.add(req);
    }
    return promise;
  }

  /**
   * Holds the set now or throws ERR_LOCK_BUSY naming what is in the way: a holder, or an earlier
   * waiter it conflicts with (fairness). Throws ERR_LOCK_SYNC_UNAVAILABLE on a table with a
   * backend; use `acquire(owner, resources, { wait: false })` there.
   */
  tryAcquire(owner: LockOwner, resources: readonly ResourceSpec[]): Lease {
    const req = new Request(this.#nextId++, checkOwner(owner), Object.freeze(normalizeResources(resources)));
    if (this.#backend !== undefined) throw new LockSyncUnavailableError();
    if (!this.#grantable(req)) throw busyError(req, this.#blockers(req));
    this.#hold(req);
    return this.#complete(req);
  }

  /** Who holds what and who waits for what, in order; plain data (copies). */
  snapshot(): LockTableSnapshot {
    const holders: LockHolderInfo[] = [];
    for (const req of this.#held.values()) {
      holders.push({
        id: req.id,
        owner: { ...req.owner },
        resources: req.resources.map((r) => ({ ...r })),
        since: req.since,
        pending: req.state === 'granting',
      });
    }
    const waiters: LockWaiterInfo[] = [];
    for (const req of this.#queue.values()) {
      waiters.push({
        id: req.id,
        owner: { ...req.owner },
        resources: req.resources.map((r) => ({ ...r })),
        since: req.since,
        blockedBy: this.#blockers(req),
      });
    }
    return { holders, waiters };
  }

  // ---- state transitions -------------------------------------------------------------------

  #grantable(req: Request): boolean {
    for (const res of req.resources) {
      if (this.#holders.scan(res, ANY) !== undefined) return false;
      if (this.#waiters.scan(res, ANY, req.id) !== undefined) return false;
    }
    return true;
  }

  /** Marks a request as holding locally (state granting). */
  #hold(req: Request): void {
    req.state = 'granting';
    req.since = Date.now();
    this.#held.set(req.id, req);
    this.#holders.add(req);
  }

  /** The request is fully granted: make its lease, settle its promise (if any). */
  #complete(req: Request): Lease {
    req.state = 'held';
    const lease = new LeaseImpl(req, (r) => this.#release(r));
    req.lease = lease;
    this.#disarm(req);
    req.resolve?.(lease);
    req.resolve = req.reject = undefined;
    return lease;
  }

  #fail(req: Request, error: unknown): void {
    req.state = 'done';
    this.#disarm(req);
    req.reject?.(error);
    req.resolve = req.reject = undefined;
  }

  #disarm(req: Request): void {
    if (req.timer !== undefined) clearTimeout(req.timer);
    req.timer = undefined;
    if (req.onAbort !== undefined) req.signal?.removeEventListener('abort', req.onAbort);
    req.onAbort = undefined;
    req.signal = undefined;
  }

  #startBackend(req: Request): void {
    const backend = this.#backend;
    if (backend === undefined || req.resources.length === 0) {
      this.#complete(req);
      return;
    }
    const controller = new AbortController();
    req.backendAbort = controller;
    let pending: Promise<LockBackendHandle>;
    try {
      pending = Promise.resolve(backend.acquire(req.resources, req.owner, controller.signal));
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (handle) => {
        if (req.state !== 'granting') {
          // Cancelled or timed out meanwhile: the caller has its error; give the locks back.
          this.#releaseBackend(req, handle);
          return;
        }
        req.backendHandle = handle;
        req.backendAbort = undefined;
        this.#complete(req);
      },
      (error: unknown) => {
        if (req.state !== 'granting') return;
        req.state = 'done';
        req.backendAbort = undefined;
        this.#dropHolder(req);
        this.#fail(req, error);
      },
    );
  }

  #releaseBackend(req: Request, handle: LockBackendHandle): void {
    const report = (error: unknown): void => {
      try {
        this.#onBackendError(error, { id: req.id, owner: req.owner, resources: req.resources });
      } catch {
        // A failing error reporter must not break the table.
      }
    };
    try {
      const result = handle.release();
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, report);
      }
    } catch (error) {
      report(error);
    }
  }

  /** Lease.release(): the backend first (so its release is on the wire before any new acquire). */
  #release(req: Request): void {
    if (req.state !== 'held') return;
    req.state = 'done';
    const handle = req.backendHandle;
    req.backendHandle = undefined;
    if (handle !== undefined) this.#releaseBackend(req, handle);
    this.#dropHolder(req);
  }

  /** Removes a holder from the table and grants the waiters that were waiting only on it. */
  #dropHolder(req: Request): void {
    this.#held.delete(req.id);
    this.#holders.remove(req);
    this.#wake(req);
  }

  /** Removes a waiter from the queue and grants the later waiters that were waiting only on it. */
  #dropWaiter(req: Request): void {
    this.#queue.delete(req.id);
    this.#waiters.remove(req);
    this.#wake(req);
  }

  /**
   * Only waiters that conflicted with `removed` can have become grantable (every other blocker is
   * still there, and a waiter granted in this pass still blocks as a holder what it blocked as a
   * waiter), so only they are re-checked, in arrival order.
   */
  #wake(removed: Request): void {
    if (this.#waiters.empty) return;
    const candidates = new Set<Request>();
    for (const res of removed.resources) this.#waiters.collectCandidates(res, candidates);
    if (candidates.size === 0) return;
    const ordered = [...candidates].sort((x, y) => x.id - y.id);
    const granted: Request[] = [];
    for (const req of ordered) {
      if (req.state !== 'waiting' || !this.#grantable(req)) continue;
      this.#queue.delete(req.id);
      this.#waiters.remove(req);
      this.#hold(req);
      granted.push(req);
    }
    // Backends are called after the pass, so a backend that calls back into the table finds it
    // consistent. A request cancelled by an earlier one's backend call is skipped.
    for (const req of granted) if (req.state === 'granting') this.#startBackend(req);
  }

  #onTimeout(req: Request): void {
    req.timer = undefined;
    const ms = req.timeoutMs ?? 0;
    if (req.state === 'waiting') {
      const error = timeoutError(req, ms, this.#blockers(req));
      req.state = 'done';
      this.#dropWaiter(req);
      this.#fail(req, error);
    } else if (req.state === 'granting') {
      const error = backendTimeoutError(req, ms);
      this.#abortGranting(req, error);
    }
  }

  #onAbort(req: Request): void {
    const signal = req.signal;
    if (signal === undefined) return;
    if (req.state === 'waiting') {
      const error = cancelledError(req, signal, this.#blockers(req));
      req.state = 'done';
      this.#dropWaiter(req);
      this.#fail(req, error);
    } else if (req.state === 'granting') {
      this.#abortGranting(req, cancelledError(req, signal, [], true));
    }
  }

  #abortGranting(req: Request, error: Error): void {
    req.state = 'done';
    req.backendAbort?.abort(error);
    req.backendAbort = undefined;
    this.#dropHolder(req);
    this.#fail(req, error);
  }

  /** Holders and earlier waiters that conflict with `req`, one entry per conflicting pair. */
  #blockers(req: Request): LockBlocker[] {
    const out: LockBlocker[] = [];
    for (const wants of req.resources) {
      const collect =
        (holding: boolean) =>
        (slot: Slot): boolean => {
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

// ---- validation and messages -----------------------------------------------------------------

function checkOwner(owner: unknown): LockOwner {
  if (owner === null || typeof owner !== 'object' || Array.isArray(owner)) {
    throw new InvalidInputError(
      'lock owner must be an object with a "label" string, e.g. { kind: "job", jobId: 3, label: "npm run dev" }; ' +
        `received ${typeof owner === 'object' ? JSON.stringify(owner) : typeof owner}`,
      { option: 'owner' },
    );
  }
  const label = (owner as { label?: unknown }).label;
  if (typeof label !== 'string' || label.length === 0) {
    throw new InvalidInputError(
      'lock owner needs a non-empty "label" string (shown in lock messages); ' +
        `received label ${JSON.stringify(label) ?? 'undefined'}`,
      { option: 'owner.label' },
    );
  }
  return owner as LockOwner;
}

function checkOptions(options: AcquireOptions): { signal: AbortSignal | undefined; timeoutMs: number | undefined } {
  if (options === null || typeof options !== 'object') {
    throw new InvalidInputError(`acquire options must be an object; received ${typeof options}`, { option: 'options' });
  }
  const { signal, timeoutMs, wait } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidInputError(`option "signal" must be an AbortSignal; received ${typeof signal}`, {
      option: 'signal',
    });
  }
  if (timeoutMs !== undefined) {
    const inRange = typeof timeoutMs === 'number' && timeoutMs >= 0 && (timeoutMs <= MAX_TIMEOUT_MS || timeoutMs === Infinity);
    if (!inRange) {
      throw new InvalidInputError(
        `option "timeoutMs" must be a number of milliseconds from 0 to ${MAX_TIMEOUT_MS}, or Infinity; ` +
          `received ${String(timeoutMs)}`,
        { option: 'timeoutMs', received: String(timeoutMs) },
      );
    }
  }
  if (wait !== undefined && typeof wait !== 'boolean') {
    throw new InvalidInputError(`option "wait" must be a boolean; received ${typeof wait}`, { option: 'wait' });
  }
  return { signal, timeoutMs };
}

/** `"npm run dev" (kind=job, jobId=3)`: the label, then the owner's other plain fields. */
export function describeOwner(owner: LockOwner): string {
  const extras: string[] = [];
  for (const [key, value] of Object.entries(owner)) {
    if (key === 'label') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      extras.push(`${key}=${value}`);
    }
  }
  const label = JSON.stringify(owner.label);
  return extras.length === 0 ? label : `${label} (${extras.join(', ')})`;
}

function listResources(resources: readonly NormalizedResource[]): string {
  return resources.length === 0 ? '(no resources)' : resources.map(formatResource).join(', ');
}

/** `port:5173 is held by "npm run dev" (kind=job, jobId=3)`; one clause per blocker, `; `-joined. */
export function describeBlockers(blockers: readonly LockBlocker[]): string {
  const clauses: string[] = [];
  for (const b of blockers) {
    const theirs = b.resource.resource === b.wants.resource ? '' : ` (through ${formatResource(b.resource)})`;
    const how = b.holding ? 'is held by' : 'is wanted first by';
    const who = b.holding ? describeOwner(b.owner) : `${describeOwner(b.owner)}, which arrived earlier and waits`;
    const clause = `${formatResource(b.wants)}${theirs} ${how} ${who}`;
    if (!clauses.includes(clause)) clauses.push(clause);
  }
  if (clauses.length <= MAX_BLOCKERS_SHOWN) return clauses.join('; ');
  const rest = clauses.length - MAX_BLOCKERS_SHOWN;
  return `${clauses.slice(0, MAX_BLOCKERS_SHOWN).join('; ')}; and ${rest} more (see the lock table snapshot)`;
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

function jobHint(blockers: readonly LockBlocker[]): string {
  const ids = new Set<string>();
  for (const b of blockers) {
    const id = b.owner['jobId'];
    if (b.holding && (typeof id === 'number' || (typeof id === 'string' && /^\d+$/.test(id)))) ids.add(String(id));
  }
  if (ids.size === 0) return '';
  return ` To free them, stop the holding job: ${[...ids].map((id) => `/job-kill ${id}`).join(', ')}.`;
}

function timeoutError(req: Request, ms: number, blockers: LockBlocker[]): LockTimeoutError {
  return new LockTimeoutError(
    `timed out after ${ms} ms waiting for ${listResources(req.resources)} for ${describeOwner(req.owner)}: ` +
      `${describeBlockers(blockers)}.${jobHint(blockers)}`,
    {
      details: {
        timeoutMs: ms,
        owner: req.owner,
        resources: req.resources.map((r) => r.resource),
        blockers: plainBlockers(blockers),
      },
    },
  );
}

function backendTimeoutError(req: Request, ms: number): LockTimeoutError {
  return new LockTimeoutError(
    `timed out after ${ms} ms waiting for the kernel locks on ${listResources(req.resources)} for ` +
      `${describeOwner(req.owner)}: this runtime grants them, but another process holds at least ` +
      'one (another heph runtime on this machine?)',
    { details: { timeoutMs: ms, owner: req.owner, resources: req.resources.map((r) => r.resource), backend: true } },
  );
}

function cancelledError(
  req: Request,
  signal: AbortSignal,
  blockers: LockBlocker[],
  backend = false,
): LockCancelledError {
  const where = backend
    ? ' while waiting for the kernel locks'
    : blockers.length > 0
      ? ` while waiting (${describeBlockers(blockers)})`
      : ' before it could be granted';
  return new LockCancelledError(
    `lock request for ${listResources(req.resources)} for ${describeOwner(req.owner)} was cancelled${where}`,
    {
      cause: signal.reason,
      details: { owner: req.owner, resources: req.resources.map((r) => r.resource), blockers: plainBlockers(blockers) },
    },
  );
}

function busyError(req: Request, blockers: LockBlocker[]): LockBusyError {
  return new LockBusyError(
    `cannot lock ${listResources(req.resources)} for ${describeOwner(req.owner)} now: ` +
      `${describeBlockers(blockers)}.${jobHint(blockers)}`,
    {
      details: { owner: req.owner, resources: req.resources.map((r) => r.resource), blockers: plainBlockers(blockers) },
    },
  );
}
