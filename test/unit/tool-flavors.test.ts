/**
 * `tools.definitions({ flavor })` against each API's documented subset of JSON Schema, written out
 * here (the oracle) from the providers' documentation, and the cost of the definitions in tokens.
 * Negative control: the validator's own schemas (bounds, examples: what the tools showed before)
 * break exactly the rules the issue counted.
 */
import { describe, expect, it } from 'vitest';
import { createTools, type SchemaFlavor, type ToolRuntime } from '../../src/index.js';
import { normalizeOptions } from '../../src/runtime/options.js';
import { backgroundSchema, jobInputSchema, jobKillSchema, jobRestartSchema, jobStatusSchema } from '../../src/tools/schema.js';

type Node = Record<string, unknown>;

/**
 * Keywords each API documents for a schema node:
 * - anthropic: strict tool use, docs.anthropic.com "Structured outputs" > JSON Schema limitations:
 *   supported type, enum, const, anyOf, properties, required, items, default, format,
 *   `additionalProperties: false`; not supported: numeric bounds (minimum, maximum, ...), string
 *   bounds (minLength, maxLength), array bounds beyond minItems 0/1. Without `strict` the API takes
 *   any JSON Schema; the strict subset is what the definitions keep to, so a host may add it.
 * - openai, openai-strict: platform.openai.com "Structured Outputs" > Supported schemas: type
 *   (string, number, boolean, integer, object, array, null, a list of them), enum, const, anyOf,
 *   properties, required, items, description, `additionalProperties: false`; `examples` is not
 *   among them, and some models reject minLength/maxLength/minimum/maximum.
 * - gemini: ai.google.dev/api/caching#Schema ("a select subset of an OpenAPI 3.0 schema object"):
 *   type, format, title, description, nullable, enum, maxItems, minItems, properties, required,
 *   minProperties, maxProperties, minLength, maxLength, pattern, example, anyOf, propertyOrdering,
 *   default, items, minimum, maximum.
 * - mcp: modelcontextprotocol.io specification, Tool.inputSchema: a JSON Schema object
 *   (`type: "object"`); held here to the core the other four share.
 */
const DOCUMENTED: Record<SchemaFlavor, ReadonlySet<string>> = {
  anthropic: new Set(['type', 'description', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', 'default', 'format']),
  openai: new Set(['type', 'description', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf']),
  'openai-strict': new Set(['type', 'description', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf']),
  gemini: new Set([
    'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required',
    'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering',
    'default', 'items', 'minimum', 'maximum',
  ]),
  mcp: new Set(['type', 'description', 'properties', 'required', 'additionalProperties', 'items', 'enum']),
};

/** Gemini's Type enum (ai.google.dev/api/caching#Type), lowercase as its JSON examples write it. */
const GEMINI_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);

/** Tool names: Anthropic and OpenAI `^[a-zA-Z0-9_-]{1,64}$`; Gemini starts with a letter or `_`, then letters, digits, `_.:-`, at most 64. */
const NAME = { anthropic: /^[a-zA-Z0-9_-]{1,64}$/, openai: /^[a-zA-Z0-9_-]{1,64}$/, gemini: /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/ };

const FLAVORS: SchemaFlavor[] = ['anthropic', 'openai', 'openai-strict', 'gemini', 'mcp'];
const LIMITS = { maxJobs: 8, outputLines: normalizeOptions({}).outputLines };

function tools() {
  return createTools({ settings: normalizeOptions({}) } as unknown as ToolRuntime);
}

/** Every schema node with its path. */
function nodes(schema: Node, path = ''): [string, Node][] {
  const out: [string, Node][] = [[path || '(root)', schema]];
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Node>)) out.push(...nodes(property, `${path}.${name}`));
  if (schema.items) out.push(...nodes(schema.items as Node, `${path}[]`));
  return out;
}

/** Every rule of `flavor` that `schema` breaks, one line each (e.g. `.timeout: exclusiveMinimum`). */
function violations(flavor: SchemaFlavor, schema: Node): string[] {
  const found: string[] = [];
  for (const [path, node] of nodes(schema)) {
    for (const keyword of Object.keys(node)) if (!DOCUMENTED[flavor].has(keyword)) found.push(`${path}: ${keyword}`);
    const isObject = node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object'));
    if (flavor === 'gemini' && !(typeof node.type === 'string' && GEMINI_TYPES.has(node.type))) found.push(`${path}: type ${JSON.stringify(node.type)}`);
    if ((flavor === 'anthropic' || flavor === 'openai-strict') && isObject && node.additionalProperties !== false) {
      found.push(`${path}: additionalProperties is not false`);
    }
    if (flavor === 'openai-strict' && isObject) {
      const required = new Set((node.required ?? []) as string[]);
      for (const name of Object.keys((node.properties ?? {}) as Node)) if (!required.has(name)) found.push(`${path}.${name}: not required`);
    }
  }
  return found;
}

function schemaOf(flavor: SchemaFlavor, definition: Node): { name: string; description: string; schema: Node } {
  if (flavor === 'openai' || flavor === 'openai-strict') {
    expect(Object.keys(definition).sort()).toEqual(['function', 'type']);
    expect(definition.type).toBe('function');
    const fn = definition.function as Node;
    expect(fn.strict).toBe(flavor === 'openai-strict' ? true : undefined);
    return { name: fn.name as string, description: fn.description as string, schema: fn.parameters as Node };
  }
  const key = { anthropic: 'input_schema', gemini: 'parameters', mcp: 'inputSchema' }[flavor];
  expect(Object.keys(definition).sort()).toEqual(['description', key, 'name'].sort());
  return { name: definition.name as string, description: definition.description as string, schema: definition[key] as Node };
}

/** A documented estimate: about 4 characters of English or JSON per token (OpenAI's rule of thumb), rounded up. */
function tokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value).length / 4);
}

describe('tools.definitions', () => {
  it.each(FLAVORS)('%s: every tool, in the API’s shape, within its documented subset', (flavor) => {
    const all = tools();
    const definitions = all.definitions({ flavor }) as unknown as Node[];
    expect(definitions).toHaveLength(5);
    for (const [i, definition] of definitions.entries()) {
      const { name, description, schema } = schemaOf(flavor, definition);
      expect(name).toBe(all.all[i]!.name);
      expect(description).toBe(all.all[i]!.description);
      expect(name).toMatch(flavor === 'gemini' ? NAME.gemini : NAME.openai);
      expect(schema.type).toBe('object');
      expect(violations(flavor, schema)).toEqual([]);
      expect(JSON.parse(JSON.stringify(definition))).toEqual(definition);
    }
  });

  it('mcp and the default inputSchema are the core, unchanged; the MCP server lists inputSchema', () => {
    const all = tools();
    expect(all.definitions({ flavor: 'mcp' }).map((tool) => tool.inputSchema)).toEqual(all.all.map((tool) => tool.inputSchema));
    for (const tool of all.all) expect(violations('mcp', tool.inputSchema as Node)).toEqual([]);
  });

  it('openai-strict: optional fields are unions with null (null among an enum’s values), required ones are not', () => {
    const [background, , jobKill] = tools().definitions({ flavor: 'openai-strict' });
    const bg = background!.function.parameters as { properties: Record<string, Node>; required: string[] };
    expect(bg.required).toEqual(['command', 'locks', 'stdin', 'merge', 'tty', 'timeout', 'wait', 'until', 'until_port', 'notify']);
    expect(bg.properties.command!.type).toBe('string');
    expect(bg.properties.timeout!.type).toEqual(['number', 'null']);
    expect(bg.properties.locks).toMatchObject({ type: ['array', 'null'], items: { type: 'string' } });
    const kill = jobKill!.function.parameters as { properties: Record<string, Node> };
    expect(kill.properties.id!.type).toBe('integer');
    expect(kill.properties.signal).toMatchObject({ type: ['string', 'null'], enum: ['INT', 'TERM', 'KILL', null] });
  });

  it('gemini: none of the 11 keywords it rejected', () => {
    const text = JSON.stringify(tools().definitions({ flavor: 'gemini' }));
    expect(text).not.toContain('additionalProperties');
    expect(text).not.toContain('examples');
    expect(text).not.toContain('exclusiveMinimum');
  });

  it('refuses a flavor it does not know, naming the five', () => {
    expect(() => tools().definitions({ flavor: 'cohere' as SchemaFlavor })).toThrow(
      'tools.definitions flavor must be one of "anthropic", "openai", "openai-strict", "gemini", "mcp"; received the string "cohere"',
    );
  });

  it('negative control: the validator’s schemas (what the tools showed before) break the rules the issue counted', () => {
    const checks = [backgroundSchema(LIMITS), jobStatusSchema(LIMITS), jobKillSchema(), jobInputSchema(), jobRestartSchema()].map((s) => s.check as Node);
    const gemini = checks.flatMap((schema) => violations('gemini', schema)).map((line) => line.split(': ')[1]);
    expect(gemini.sort()).toEqual([...Array(5).fill('additionalProperties'), ...Array(5).fill('examples'), 'exclusiveMinimum'].sort());
    // OpenAI strict: 4 of 5 tools have an optional field (job_restart's only field is required); all 5 carry examples.
    expect(checks.filter((schema) => violations('openai-strict', schema).some((line) => line.endsWith('not required')))).toHaveLength(4);
    expect(checks.filter((schema) => violations('openai-strict', schema).some((line) => line.endsWith(': examples')))).toHaveLength(5);
    // Anthropic strict: 32 numeric, length and item bounds (5 of them maximum: 9007199254740991, the job id),
    // since then the 4 of until_port (issue 13, item 5: minimum 1, maximum 65535 on two tools), and
    // the 4 of notify (issue 26: minLength, maxLength on two tools).
    const bounds = /: (minimum|maximum|exclusiveMinimum|minLength|maxLength|maxItems)$/;
    expect(checks.flatMap((schema) => violations('anthropic', schema)).filter((line) => bounds.test(line))).toHaveLength(32 + 4 + 4);
    expect(JSON.stringify(checks).match(/"maximum":9007199254740991/g)).toHaveLength(5); // 4 job ids and job_status's since
  });
});

describe('what the definitions cost', () => {
  // Before this change (bounds, examples and the long descriptions), by this estimate: 1600 (Anthropic shape); now 774 to 940.
  it.each(FLAVORS)('%s: the five definitions are at most 1000 tokens (characters / 4)', (flavor) => {
    expect(tokens(tools().definitions({ flavor }))).toBeLessThanOrEqual(1000);
  });
});
