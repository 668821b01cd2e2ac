/**
 * How `path:` resources nest, as a pure function with no imports: the lock table's conflict index
 * and the supervisor's kernel locks both lock a path's ancestors, and the supervisor may import
 * only the protocol folder, where this file is meant to move.
 */

/**
 * The strict ancestors of a normalised absolute path, nearest first: `/a/b/c` → `/a/b`, `/a`, `/`.
 */
export function pathAncestors(value: string): string[] {
  const out: string[] = [];
  let end = value.lastIndexOf('/');
  while (end > 0) {
    out.push(value.slice(0, end));
    end = value.lastIndexOf('/', end - 1);
  }
  if (value !== '/') out.push('/');
  return out;
}
