/**
 * Lock resources: parsing, validation, normalisation and the conflict rules.
 *
 * A resource is `kind:value` (`port:5173`, `worktree:main`, `path:/repo/node_modules`). Two
 * resources overlap when they have the same kind and equal values, except for `path:`, where a
 * directory covers everything below it (`path:/a` overlaps `path:/a/b`, not `path:/ab`). Two
 * overlapping holds conflict unless both are shared.
 */

import { posix } from 'node:path';
import { BadResourceError } from '../protocol/errors.js';
import { pathAncestors } from '../protocol/resource-path.js';

export { pathAncestors };

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
const SHOWN_MAX = 60;

const ACCEPTED =
  'expected "kind:value": kind made of lowercase letters, digits and "-", value non-empty ' +
  `without NUL or newline, at most ${MAX_RESOURCE_LENGTH} characters in all; ` +
  'a path: value must be absolute (e.g. "path:/repo/node_modules")';

/** Shows a received value in a message: quoted, and cut when long. */
export function showReceived(value: unknown): string {
  if (typeof value === 'string') {
    if (value.length <= SHOWN_MAX) return JSON.stringify(value);
    return `${JSON.stringify(value.slice(0, SHOWN_MAX))}… (${value.length} characters)`;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') {
    let text: string;
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = Object.prototype.toString.call(value);
    }
    return text.length <= SHOWN_MAX ? text : `${text.slice(0, SHOWN_MAX)}…`;
  }
  return `${typeof value} ${String(value)}`;
}

function bad(received: unknown, reason: string): BadResourceError {
  return new BadResourceError(`bad lock resource ${showReceived(received)}: ${reason}; ${ACCEPTED}`, {
    details: { received: typeof received === 'string' ? received : showReceived(received), reason },
  });
}

/**
 * Validates one resource string and returns its canonical form.
 * @throws BadResourceError (ERR_BAD_RESOURCE) saying what was wrong, what is accepted and what was received.
 */
export function parseResource(text: unknown): ParsedResource {
  if (typeof text !== 'string') throw bad(text, `a resource must be a string, got ${typeof text}`);
  if (text.length === 0) throw bad(text, 'it is empty');
  if (text.length > MAX_RESOURCE_LENGTH) {
    throw bad(text, `it is ${text.length} characters long, more than ${MAX_RESOURCE_LENGTH}`);
  }
  const colon = text.indexOf(':');
  if (colon < 0) throw bad(text, 'it has no ":" between kind and value');
  const kind = text.slice(0, colon);
  let value = text.slice(colon + 1);
  if (kind.length === 0) throw bad(text, 'the kind before ":" is empty');
  if (!KIND_RE.test(kind)) {
    throw bad(text, `the kind ${JSON.stringify(kind)} may only contain lowercase letters, digits and "-"`);
  }
  if (value.length === 0) throw bad(text, 'the value after ":" is empty');
  const forbidden = FORBIDDEN_RE.exec(value);
  if (forbidden) {
    const name = forbidden[0] === '\0' ? 'a NUL character' : 'a newline';
    throw bad(text, `the value contains ${name} at offset ${colon + 1 + forbidden.index}`);
  }
  if (kind === PATH_KIND) {
    if (!value.startsWith('/')) throw bad(text, 'a path: value must be an absolute path (start with "/")');
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
 * Validates one resource spec (string = exclusive, or `{ resource, mode }`).
 * @throws BadResourceError
 */
export function normalizeResource(spec: unknown): NormalizedResource {
  if (typeof spec === 'string') return { ...parseResource(spec), mode: 'exclusive' };
  if (spec !== null && typeof spec === 'object' && !Array.isArray(spec)) {
    const { resource, mode } = spec as { resource?: unknown; mode?: unknown };
    if (resource === undefined) {
      throw bad(spec, 'an object resource needs a "resource" string, as in { resource: "path:/x", mode: "shared" }');
    }
    if (mode !== undefined && mode !== 'exclusive' && mode !== 'shared') {
      throw new BadResourceError(
        `bad lock mode ${showReceived(mode)} for ${showReceived(resource)}: ` +
          'mode must be "exclusive" (the default) or "shared"',
        { details: { received: showReceived(mode), resource: showReceived(resource) } },
      );
    }
    return { ...parseResource(resource), mode: mode ?? 'exclusive' };
  }
  throw bad(spec, 'a resource must be a "kind:value" string or { resource, mode }');
}

/**
 * Validates a request: an array of resource specs. Duplicates are merged (exclusive wins) and the
 * result is sorted by resource string, so every holder takes kernel locks in the same order.
 * @throws BadResourceError
 */
export function normalizeResources(specs: unknown): NormalizedResource[] {
  if (!Array.isArray(specs)) {
    const hint = typeof specs === 'string' ? `; wrap a single resource in an array: [${JSON.stringify(specs)}]` : '';
    throw new BadResourceError(
      `bad lock request ${showReceived(specs)}: resources must be an array of "kind:value" strings ` +
        `or { resource, mode } objects${hint}`,
      { details: { received: showReceived(specs) } },
    );
  }
  if (specs.length === 1) return [normalizeResource(specs[0])];
  const byName = new Map<string, NormalizedResource>();
  for (const spec of specs) {
    const res = normalizeResource(spec);
    const seen = byName.get(res.resource);
    if (seen === undefined || (seen.mode === 'shared' && res.mode === 'exclusive')) byName.set(res.resource, res);
  }
  return [...byName.values()].sort((x, y) => (x.resource < y.resource ? -1 : x.resource > y.resource ? 1 : 0));
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

/** `port:5173` or `path:/x (shared)`: how a resource is shown in messages. */
export function formatResource(res: NormalizedResource): string {
  return res.mode === 'shared' ? `${res.resource} (shared)` : res.resource;
}

