/**
 * Which entries (holders, or waiters) conflict with a resource, found by lookup instead of by
 * scanning every entry: entries are indexed by resource, and `path:` entries also under every
 * ancestor of their path, so a check costs O(path depth), not O(entries).
 */

import { pathAncestors } from '../protocol/resource-path.js';
import { PATH_KIND, type NormalizedResource } from './resource.js';

/** What the index needs of a request: an id that grows with arrival, and its resources. */
export interface Indexed {
  readonly id: number;
  readonly resources: readonly NormalizedResource[];
}

/** One resource of one entry. */
export interface Slot<R extends Indexed> {
  readonly req: R;
  readonly res: NormalizedResource;
}

type SlotMap<R extends Indexed> = Map<string, Set<Slot<R>>>;

/** A visitor for `scan` that stops at the first conflicting slot. */
export const ANY = (): boolean => true;

/**
 * Slots by resource. `exact*` by `kind:value`; `below*` by every strict ancestor of a `path:`
 * value, so "what is held below /a" is one lookup. Sets keep insertion order, which for the
 * waiter index is arrival order (see `scan`'s `beforeId`).
 */
export class ConflictIndex<R extends Indexed> {
  private readonly exactEx: SlotMap<R> = new Map();
  private readonly exactSh: SlotMap<R> = new Map();
  private readonly belowEx: SlotMap<R> = new Map();
  private readonly belowSh: SlotMap<R> = new Map();
  private readonly slots = new Map<R, Slot<R>[]>();

  add(req: R): void {
    const slots: Slot<R>[] = req.resources.map((res) => ({ req, res }));
    for (const slot of slots) this.place(slot, put);
    this.slots.set(req, slots);
  }

  remove(req: R): void {
    const slots = this.slots.get(req);
    if (slots === undefined) return;
    this.slots.delete(req);
    for (const slot of slots) this.place(slot, take);
  }

  /** Puts a slot in (or takes it out of) its exact set and, for a path, its ancestors' sets. */
  private place(slot: Slot<R>, apply: (map: SlotMap<R>, key: string, slot: Slot<R>) => void): void {
    const res = slot.res;
    const shared = res.mode === 'shared';
    apply(shared ? this.exactSh : this.exactEx, res.resource, slot);
    if (res.kind !== PATH_KIND) return;
    const below = shared ? this.belowSh : this.belowEx;
    for (const anc of pathAncestors(res.value)) apply(below, anc, slot);
  }

  get empty(): boolean {
    return this.slots.size === 0;
  }

  /**
   * Visits the slots that conflict with `res` (overlap, and not both shared) until `visit`
   * returns true; returns that slot. With `beforeId`, only slots of requests with a smaller id
   * are visited; valid for the waiter index only, whose sets are in id order.
   */
  scan(res: NormalizedResource, visit: (slot: Slot<R>) => boolean, beforeId = Infinity): Slot<R> | undefined {
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
  collectCandidates(res: NormalizedResource, out: Set<R>): void {
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

  private collectExact(key: string, withShared: boolean, out: Set<R>): void {
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

function firstOf<T>(set: Set<T> | undefined): T | undefined {
  if (set === undefined) return undefined;
  for (const item of set) return item;
  return undefined;
}

function put<T>(map: Map<string, Set<T>>, key: string, item: T): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([item]));
  else set.add(item);
}

function take<T>(map: Map<string, Set<T>>, key: string, item: T): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(item);
  if (set.size === 0) map.delete(key);
}

function visitSet<R extends Indexed>(
  set: Set<Slot<R>> | undefined,
  visit: (slot: Slot<R>) => boolean,
  beforeId: number,
): Slot<R> | undefined {
  if (set === undefined) return undefined;
  for (const slot of set) {
    if (slot.req.id >= beforeId) break;
    if (visit(slot)) return slot;
  }
  return undefined;
}
