/**
 * The import graph of the built tree (dist/): every relative `import`/`export ... from` and
 * `import()` of each .js file, resolved to the file it names, and the d.ts files a declaration
 * reaches. Tests use it to check the layers: which folder may reach which.
 */
import fs from 'node:fs';
import path from 'node:path';

export const DIST = path.resolve(import.meta.dirname, '../../dist');

/** Specifiers of static imports, re-exports and dynamic imports of literal strings. */
export function specifiersOf(source: string): string[] {
  const found: string[] = [];
  const patterns = [/\b(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]!);
  return found;
}

/** Every file reachable from `entries` through relative specifiers, with the edges that reach it. */
export function walk(entries: string[], read: (file: string) => string = (file) => fs.readFileSync(file, 'utf8')): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const stack = [...entries];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (graph.has(file)) continue;
    const targets = specifiersOf(read(file))
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => path.resolve(path.dirname(file), specifier));
    graph.set(file, targets);
    stack.push(...targets);
  }
  return graph;
}

/** Every .js file under a dist folder. */
export function builtFiles(folder: string, extension = '.js'): string[] {
  return fs
    .readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(extension))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** The edges `from -> to` of a graph that break a rule (`allowed(from, to)` false). */
export function violations(graph: Map<string, string[]>, allowed: (from: string, to: string) => boolean): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) for (const to of targets) if (!allowed(from, to)) out.push(`${path.relative(DIST, from)} -> ${path.relative(DIST, to)}`);
  return out;
}
