/**
 * The one rule both sides need about `path:` resources: the ancestors of a path, which a lock on
 * the path must also mark (a lock on `/repo` covers `/repo/node_modules`).
 */

/** `/a/b/c` → `['/a/b', '/a', '/']` (the path itself not included). */
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
