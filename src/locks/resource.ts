/**
 * Lock resources: parsing, validation, normalisation and the conflict rules.
 *
 * A resource is `kind:value` (`port:5173`, `worktree:main`, `path:/repo/node_modules`). Two
 * resources overlap when they have the same kind and equal values, except for `path:`, where a
 * directory covers everything below it (`path:/a` overlaps `path:/a/b`, not `path:/ab`). Two
 * overlapping holds conflict unless both are shared.
 */

import { posix } from 'node:path';
import { describeValue } from '../protocol/describe.js';
import { badLockModeMessage, badLockRequestMessage, badResourceMessage, badResourceReason as why } from '../wording/index.js';
import { BadResourceError } from '../protocol/errors.js';

/** Exclusive (the default) excludes every overlapping hold; shared excludes only exclusive ones. */
export type LockMode = 'exclusive' | 'shared';

/** What a caller may pass for one resource: a string (exclusive) or an object with a mode. */
export type ResourceSpec = string | { resource: string; mode?: LockMode };

/** A resource string after validation, split into its parts. */
export interface ParsedResource {
  /** Canonical `kind:value`; for `path:` the value is normalised (no `.`/`..`, no trailing `/`). */
  readonly resource: string;
  readonly kind: string;
  readonly value: string;
}

/** One validated resource of a request, with its mode. */
export interface NormalizedResource extends ParsedResource {
  readonly mode: LockMode;
}

/** A pair of resources, one from each side, that cannot be held at the same time. */
export interface ResourceConflict {
  readonly a: NormalizedResource;
  readonly b: NormalizedResource;
}

/** Longest resource string accepted, in characters (lock file names are derived from it). */
export const MAX_RESOURCE_LENGTH = 1024;

/** The kind of resource whose values nest (a directory covers everything below it). */
export const PATH_KIND = 'path';

const KIND_RE = /^[a-z0-9-]+$/;
// NUL cannot appear in a file name; a newline would break one-line reports and lock-file listings.
const FORBIDDEN_RE = /[\0\n\r]/;

function bad(received: unknown, reason: string): BadResourceError {
  const shown = describeValue(received);
  return new BadResourceError(badResourceMessage(shown, reason, MAX_RESOURCE_LENGTH), {
    details: { received: typeof received === 'string' ? received : shown, reason },
  });
}

/**
 * Validates one resource string and returns its canonical form.
 * @throws BadResourceError (ERR_BAD_RESOURCE) saying what was wrong, what is accepted and what was received.
 */
export function parseResource(text: unknown): ParsedResource {
  if (typeof text !== 'string') throw bad(text, why.notString(typeof text));
  if (text.length === 0) throw bad(text, why.empty);
  if (text.length > MAX_RESOURCE_LENGTH) {
    throw bad(text, why.tooLong(text.length, MAX_RESOURCE_LENGTH));
  }
  const colon = text.indexOf(':');
  if (colon < 0) throw bad(text, why.noColon);
  const kind = text.slice(0, colon);
  let value = text.slice(colon + 1);
  if (kind.length === 0) throw bad(text, why.emptyKind);
  if (!KIND_RE.test(kind)) throw bad(text, why.badKind(kind));
  if (value.length === 0) throw bad(text, why.emptyValue);
  const forbidden = FORBIDDEN_RE.exec(value);
  if (forbidden) throw bad(text, why.forbidden(forbidden[0] as '\0' | '\n' | '\r', colon + 1 + forbidden.index));
  if (kind === PATH_KIND) {
    if (!value.startsWith('/')) throw bad(text, why.relativePath);
    value = normalizePath(value);
    return { resource: `${kind}:${value}`, kind, value };
  }
  return { resource: text, kind, value };
}

/** Resolves `.`, `..` and repeated slashes, and strips a trailing slash (the root stays `/`). */
function normalizePath(value: string): string {
  let out = posix.normalize(value);
  // posix.normalize keeps a leading "//" (POSIX leaves its meaning to the implementation; Linux
  // treats it as "/"), and keeps a trailing slash.
  if (out.startsWith('//')) out = out.replace(/^\/+/, '/');
  if (out.length > 1 && out.endsWith('/')) out = out.slice(0, -1);
  return out;
}

/**
 * Normalised values, remembered: a resource or set checked once (where it entered, e.g. a tool
 * call) passes through every later normalisation (the runtime, the lock table) as it is, so input
 * is validated once and the validated value flows inward.
 */
const normalized = new WeakSet<object>();

function remember<T extends object>(value: T): T {
  normalized.add(Object.freeze(value));
  return value;
}

const NO_RESOURCES: readonly NormalizedResource[] = remember([]);

/**
 * Validates one resource spec (string = exclusive, or `{ resource, mode }`).
 * @throws BadResourceError
 */
export function normalizeResource(spec: unknown): NormalizedResource {
  if (typeof spec === 'object' && spec !== null && normalized.has(spec)) return spec as NormalizedResource;
  if (typeof spec === 'string') return remember({ ...parseResource(spec), mode: 'exclusive' });
  if (spec !== null && typeof spec === 'object' && !Array.isArray(spec)) {
    const { resource, mode } = spec as { resource?: unknown; mode?: unknown };
    if (resource === undefined) throw bad(spec, why.objectWithoutResource);
    if (mode !== undefined && mode !== 'exclusive' && mode !== 'shared') {
      const shownMode = describeValue(mode);
      const shownResource = describeValue(resource);
      throw new BadResourceError(badLockModeMessage(shownMode, shownResource), {
        details: { received: shownMode, resource: shownResource },
      });
    }
    return remember({ ...parseResource(resource), mode: mode ?? 'exclusive' });
  }
  throw bad(spec, why.notSpec);
}

/**
 * Validates a request: an array of resource specs. Duplicates are merged (exclusive wins) and the
 * result is sorted by resource string, so every holder takes kernel locks in the same order.
 * @throws BadResourceError
 */
export function normalizeResources(specs: unknown): readonly NormalizedResource[] {
  if (Array.isArray(specs) && normalized.has(specs)) return specs as readonly NormalizedResource[];
  if (!Array.isArray(specs)) {
    const shown = describeValue(specs);
    throw new BadResourceError(badLockRequestMessage(shown, typeof specs === 'string' ? specs : undefined), {
      details: { received: shown },
    });
  }
  // Most jobs take no locks: one shared frozen empty set, not a new remembered one per call.
  if (specs.length === 0) return NO_RESOURCES;
  if (specs.length === 1) return remember([normalizeResource(specs[0])]);
  const byName = new Map<string, NormalizedResource>();
  for (const spec of specs) {
    const res = normalizeResource(spec);
    const seen = byName.get(res.resource);
    if (seen === undefined || (seen.mode === 'shared' && res.mode === 'exclusive')) byName.set(res.resource, res);
  }
  return remember([...byName.values()].sort((x, y) => (x.resource < y.resource ? -1 : x.resource > y.resource ? 1 : 0)));
}

/** Whether two resources name overlapping things (regardless of mode). */
export function resourcesOverlap(a: ParsedResource, b: ParsedResource): boolean {
  if (a.kind !== b.kind) return false;
  if (a.value === b.value) return true;
  if (a.kind !== PATH_KIND) return false;
  return isPathWithin(a.value, b.value) || isPathWithin(b.value, a.value);
}

/** Whether `inner` is strictly below the directory `outer` (both normalised absolute paths). */
function isPathWithin(outer: string, inner: string): boolean {
  if (outer === '/') return inner !== '/';
  return inner.length > outer.length && inner.startsWith(outer) && inner.charCodeAt(outer.length) === 0x2f;
}

/** Whether two holds cannot coexist: they overlap and at least one is exclusive. */
export function resourcesConflict(a: NormalizedResource, b: NormalizedResource): boolean {
  return (a.mode === 'exclusive' || b.mode === 'exclusive') && resourcesOverlap(a, b);
}

/**
 * The conflicting pairs between two requests (`a` from the first, `b` from the second), in order.
 * Used by job_status / job_kill to fail at once, naming the overlap, instead of waiting on
 * themselves. Accepts raw specs or already normalised resources.
 * @throws BadResourceError when either side is not a valid request
 */
export function overlaps(
  resourcesA: readonly (ResourceSpec | NormalizedResource)[],
  resourcesB: readonly (ResourceSpec | NormalizedResource)[],
): ResourceConflict[] {
  const a = normalizeResources(resourcesA);
  const b = normalizeResources(resourcesB);
  const out: ResourceConflict[] = [];
  for (const x of a) for (const y of b) if (resourcesConflict(x, y)) out.push({ a: x, b: y });
  return out;
}
