/**
 * The layers of the built tree (issue 11): supervisor/ reaches src/ only through src/protocol/;
 * src/ never reaches supervisor/; the public type declarations name no test hook. Each rule is
 * also run on a graph that breaks it (a negative control), so a check that cannot fail is caught.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtFiles, DIST, violations, walk } from '../helpers/import-graph.js';

const SRC = path.join(DIST, 'src');
const SUPERVISOR = path.join(DIST, 'supervisor');
const PROTOCOL = path.join(SRC, 'protocol');

const inside = (folder: string) => (file: string) => file === folder || file.startsWith(`${folder}${path.sep}`);
const inSrc = inside(SRC);
const inSupervisor = inside(SUPERVISOR);
const inProtocol = inside(PROTOCOL);

/** supervisor/ -> src/ only into src/protocol/; src/ -> never supervisor/; protocol/ -> only protocol/. */
function layerRule(from: string, to: string): boolean {
  if (inSupervisor(from) && inSrc(to)) return inProtocol(to);
  if (inSrc(from) && inSupervisor(to)) return false;
  if (inProtocol(from)) return inProtocol(to);
  return true;
}

describe('the layers of the built tree', () => {
  it('supervisor/ reaches src/ only through src/protocol/, and src/ never reaches supervisor/', () => {
    const graph = walk([...builtFiles(SUPERVISOR), ...builtFiles(SRC)]);
    expect(graph.size).toBeGreaterThan(40);
    // The supervisor really uses the protocol (the rule is about something that exists).
    expect([...graph].some(([from, targets]) => inSupervisor(from) && targets.some(inProtocol))).toBe(true);
    expect(violations(graph, layerRule)).toEqual([]);
  });

  it('negative control: a supervisor module importing src/runtime, and src importing the addon loader, are caught', () => {
    const planted = new Map<string, string>([
      [path.join(SUPERVISOR, 'planted.js'), "import { JobRuntime } from '../src/runtime/job-runtime.js';\nimport '../src/protocol/codec.js';"],
      [path.join(SRC, 'planted.js'), "export { native } from '../supervisor/native.js';"],
      [path.join(PROTOCOL, 'planted.js'), "const wording = await import('../wording/index.js');"],
    ]);
    const graph = walk([...planted.keys()], (file) => planted.get(file) ?? '');
    expect(violations(graph, layerRule).sort()).toEqual([
      'src/planted.js -> supervisor/native.js',
      'src/protocol/planted.js -> src/wording/index.js',
      'supervisor/planted.js -> src/runtime/job-runtime.js',
    ]);
  });
});

/** Names that exist only for tests, and must not be part of what the package exports. (The
 * supervisor's diagnostics reply is a message of the protocol, not a method of the API.) */
const TEST_HOOKS = /\b(withTestSwitches|TEST_SWITCHES|killSupervisorForTest|killSupervisor|settledLostCleanups|waitFor|supervisorHello|supervisorDiagnostics|registerInternals|internalsOf)\b/g;

/** The declarations a consumer of the package sees: what package.json exports, and what it reaches. */
function exportedDeclarations(): Map<string, string[]> {
  const pkg = JSON.parse(fs.readFileSync(path.join(DIST, '..', 'package.json'), 'utf8')) as { exports: Record<string, { types: string }> };
  const entries = Object.values(pkg.exports).map((entry) => path.resolve(DIST, '..', entry.types));
  const read = (file: string) => fs.readFileSync(file.replace(/\.js$/, '.d.ts'), 'utf8');
  return walk(entries, read);
}

function hooksNamed(files: Iterable<string>, read: (file: string) => string): string[] {
  const named: string[] = [];
  for (const file of files) for (const match of read(file).matchAll(TEST_HOOKS)) named.push(`${path.relative(DIST, file)}: ${match[0]}`);
  return named;
}

describe('the public type declarations', () => {
  it('name no test hook', () => {
    const declarations = exportedDeclarations();
    const read = (file: string) => fs.readFileSync(file.replace(/\.js$/, '.d.ts'), 'utf8');
    expect(declarations.size).toBeGreaterThan(10);
    expect([...declarations.keys()].some((file) => file.endsWith(path.join('runtime', 'job-runtime.d.ts')) || file.endsWith(path.join('runtime', 'job-runtime.js')))).toBe(true);
    expect(hooksNamed(declarations.keys(), read)).toEqual([]);
    // Nor does any of them lead to the testing module.
    expect([...declarations.keys()].filter((file) => /testing\.(d\.ts|js)$/.test(file))).toEqual([]);
  });

  it('negative control: the testing module itself names them', () => {
    const testing = path.join(SRC, 'testing.d.ts');
    expect(hooksNamed([testing], (file) => fs.readFileSync(file, 'utf8')).length).toBeGreaterThan(3);
  });
});

/**
 * The README's map of src/ (folder -> what it may import), checked on the sources: a value import
 * must be allowed; a type-only import may also reach the folders listed under `types`.
 */
const SRC_RULES: Record<string, { values: string[]; types?: string[] }> = {
  protocol: { values: [] },
  facts: { values: ['protocol'] },
  wording: { values: ['protocol', 'facts'] },
  runtime: { values: ['protocol', 'facts', 'locks', 'reports', 'wording'] },
  locks: { values: ['protocol', 'facts', 'wording'] },
  reports: { values: ['protocol', 'facts', 'wording'] },
  tools: { values: ['runtime', 'locks', 'reports', 'wording', 'protocol', 'facts'] },
  cli: { values: ['tools', 'runtime', 'reports'], types: ['protocol'] },
  testing: { values: ['runtime'] },
  // The framework adapters: createTools in each framework's shape (the MCP server's instructions too).
  adapters: { values: ['tools', 'runtime', 'wording', 'cli'], types: ['reports', 'locks', 'protocol', 'facts'] },
  index: { values: ['protocol', 'facts', 'runtime', 'locks', 'reports', 'tools', 'wording'] },
};

const SOURCE_ROOT = path.resolve(import.meta.dirname, '../../src');

function folderOf(file: string): string {
  const [first] = path.relative(SOURCE_ROOT, file).split(path.sep);
  return first!.replace(/\.(ts|js)$/, '');
}

/** `from -> to` edges between src/ folders that the rules do not allow. */
function srcViolations(sources: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of sources) {
    const from = folderOf(file);
    for (const match of text.matchAll(/^(?:import|export)(\s+type)?[^'"]*?from\s*'(\.[^']+)'/gm)) {
      const target = path.resolve(path.dirname(file), match[2]!);
      if (!target.startsWith(SOURCE_ROOT)) continue;
      const to = folderOf(target);
      if (to === from) continue;
      const rule = SRC_RULES[from];
      const allowed = rule !== undefined && (rule.values.includes(to) || (match[1] !== undefined && (rule.types ?? []).includes(to)));
      if (!allowed) out.push(`${from} -> ${to}${match[1] ? ' (type)' : ''} in ${path.relative(SOURCE_ROOT, file)}`);
    }
  }
  return out;
}

/** Every source file of src/ and its text. */
function srcSources(): Map<string, string> {
  return new Map(
    fs
      .readdirSync(SOURCE_ROOT, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => [path.join(entry.parentPath, entry.name), fs.readFileSync(path.join(entry.parentPath, entry.name), 'utf8')] as const),
  );
}

describe("the README's map of src/", () => {
  it('every import between src/ folders is one the map allows', () => {
    const sources = srcSources();
    expect(sources.size).toBeGreaterThan(40);
    expect(srcViolations(sources)).toEqual([]);
  });

  it('negative control: the protocol importing wording, locks importing tools, reports naming a runtime type, are caught', () => {
    const planted = new Map([
      [path.join(SOURCE_ROOT, 'protocol', 'planted.ts'), "import { say } from '../wording/index.js';"],
      [path.join(SOURCE_ROOT, 'locks', 'planted.ts'), "import { createTools } from '../tools/index.js';\nimport type { Tools } from '../tools/index.js';"],
      [path.join(SOURCE_ROOT, 'reports', 'planted.ts'), "import type { JobRecord } from '../runtime/job-record.js';"],
    ]);
    expect(srcViolations(planted).sort()).toEqual([
      'locks -> tools (type) in locks/planted.ts',
      'locks -> tools in locks/planted.ts',
      'protocol -> wording in protocol/planted.ts',
      'reports -> runtime (type) in reports/planted.ts',
    ]);
  });
});

/** The circles in the import graph of `sources` (type imports included): each as its files, sorted. */
function importCircles(sources: Map<string, string>): string[][] {
  const edges = new Map<string, string[]>();
  for (const [file, text] of sources) {
    const targets = [...text.matchAll(/^(?:import|export)(?:\s+type)?[^'"]*?from\s*'(\.[^']+)'/gm)].map((match) => path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, '.ts'));
    edges.set(file, targets.filter((target) => sources.has(target)));
  }
  // Tarjan's strongly connected components: a component of two or more files is a circle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    for (const target of edges.get(file)!) {
      if (!index.has(target)) visit(target);
      if (stack.includes(target)) low.set(file, Math.min(low.get(file)!, low.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component = stack.splice(stack.indexOf(file));
    if (component.length > 1) circles.push(component.map((entry) => path.relative(SOURCE_ROOT, entry)).sort());
  };
  for (const file of sources.keys()) if (!index.has(file)) visit(file);
  return circles;
}

describe('the import graph of src/', () => {
  it('has no circle, type imports included', () => {
    const sources = srcSources();
    expect(sources.size).toBeGreaterThan(40);
    expect(importCircles(sources)).toEqual([]);
  });

  it('negative control: a type import back from the wording to the reports is a circle', () => {
    const planted = new Map([
      [path.join(SOURCE_ROOT, 'reports', 'report.ts'), "import { say } from '../wording/index.js';"],
      [path.join(SOURCE_ROOT, 'wording', 'index.ts'), "export * from './reports.js';"],
      [path.join(SOURCE_ROOT, 'wording', 'reports.ts'), "import type { JobReport } from '../reports/report.js';"],
      [path.join(SOURCE_ROOT, 'facts.ts'), "import type { JobStats } from './protocol/stats.js';"],
    ]);
    expect(importCircles(planted)).toEqual([['reports/report.ts', 'wording/index.ts', 'wording/reports.ts']]);
  });
});
