/**
 * The tool list in the shape each model API takes (`tools.definitions({ flavor })`), and the
 * "common core" schema every one of them accepts.
 *
 * The tools validate their input against a fuller schema (bounds, examples: src/tools/schema.ts);
 * what a model is shown is the core below, converted per API. The keyword sets each API documents
 * are in `FLAVOR_KEYWORDS` (test/unit/tool-flavors.test.ts checks every definition against them).
 */
import { toolsConfig } from '../wording/index.js';
import type { JsonSchema } from '../facts.js';

export type SchemaFlavor = 'anthropic' | 'openai' | 'openai-strict' | 'gemini' | 'mcp';

export const SCHEMA_FLAVORS: readonly SchemaFlavor[] = ['anthropic', 'openai', 'openai-strict', 'gemini', 'mcp'];

/** A schema as an API receives it (a type may be a list, e.g. `["integer", "null"]`). */
export type FlavorSchema = { [keyword: string]: unknown };

/** Anthropic Messages API `tools[]` (docs.anthropic.com, "Tool use": name, description, input_schema). */
export interface AnthropicToolDefinition {
  name: string;
  description: string;
  input_schema: FlavorSchema;
}

/** OpenAI Chat Completions `tools[]` (platform.openai.com, "Function calling"). */
export interface OpenAIToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: FlavorSchema; strict?: boolean };
}

/** Gemini `functionDeclarations[]` (ai.google.dev/api/caching#FunctionDeclaration). */
export interface GeminiFunctionDeclaration {
  name: string;
  description: string;
  parameters: FlavorSchema;
}

/** MCP `tools/list` entry (modelcontextprotocol.io specification, Tool: name, description, inputSchema). */
export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: FlavorSchema;
}

export interface FlavorDefinitions {
  anthropic: AnthropicToolDefinition;
  openai: OpenAIToolDefinition;
  'openai-strict': OpenAIToolDefinition;
  gemini: GeminiFunctionDeclaration;
  mcp: McpToolDefinition;
}

/**
 * The keywords of the default `inputSchema`: those all five APIs accept, nothing else (the bounds a
 * model should know are said in the descriptions). Each API's documented subset, which the
 * flavors are tested against, is written out with its source in test/unit/tool-flavors.test.ts:
 * - Anthropic strict tool use rejects numeric and string-length bounds ("Structured outputs",
 *   JSON Schema limitations) and wants `additionalProperties: false` on every object;
 * - OpenAI strict mode ("Structured Outputs", Supported schemas) wants every property in
 *   `required` and `additionalProperties: false`, and does not support `examples`;
 * - Gemini's Schema (ai.google.dev/api/caching#Schema, "a select subset of an OpenAPI 3.0 schema
 *   object") has no additionalProperties, examples or exclusiveMinimum, and no type lists;
 * - MCP takes any JSON Schema object (Tool.inputSchema).
 */
const CORE_KEYWORDS: ReadonlySet<string> = new Set(['type', 'description', 'properties', 'required', 'additionalProperties', 'items', 'enum']);

/** `schema` with only the core keywords, at every level (the validator keeps the rest). */
export function coreSchema(schema: JsonSchema): JsonSchema {
  const out: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (!CORE_KEYWORDS.has(keyword)) continue;
    if (keyword === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, JsonSchema>).map(([name, property]) => [name, coreSchema(property)]));
    } else if (keyword === 'items') {
      out.items = coreSchema(value as JsonSchema);
    } else {
      out[keyword] = value;
    }
  }
  return out as JsonSchema;
}

/**
 * OpenAI strict mode: every property required, the optional ones nullable (`["integer", "null"]`,
 * and null among an enum's values), `additionalProperties: false` on every object. The tools read
 * a null as the field left out (src/tools/validate.ts).
 */
export function openAIStrictSchema(schema: JsonSchema, nullable = false): FlavorSchema {
  const out: FlavorSchema = { ...schema };
  if (schema.type === 'object') {
    const properties = schema.properties ?? {};
    const required = new Set(schema.required ?? []);
    out.properties = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, openAIStrictSchema(property, !required.has(name))]));
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  if (schema.items) out.items = openAIStrictSchema(schema.items);
  if (nullable) {
    out.type = [schema.type, 'null'];
    if (schema.enum) out.enum = [...schema.enum, null];
  }
  return out;
}

/** Gemini's OpenAPI subset: no additionalProperties; a type list becomes one type and `nullable`. */
export function geminiSchema(schema: FlavorSchema): FlavorSchema {
  const out: FlavorSchema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === 'additionalProperties') continue;
    if (keyword === 'type' && Array.isArray(value)) {
      const types = value.filter((type) => type !== 'null');
      out.type = types[0];
      if (types.length < value.length) out.nullable = true;
    } else if (keyword === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, FlavorSchema>).map(([name, property]) => [name, geminiSchema(property)]));
    } else if (keyword === 'items') {
      out.items = geminiSchema(value as FlavorSchema);
    } else {
      out[keyword] = value;
    }
  }
  return out;
}

/** What a flavor needs of a tool (a `ToolDefinition` is one; its `inputSchema` is the core). */
export interface FlavorSource {
  name: string;
  description: string;
  inputSchema: object;
}

/** The tools in `flavor`'s shape. */
export function definitionsFor<F extends SchemaFlavor>(flavor: F, tools: readonly FlavorSource[]): FlavorDefinitions[F][] {
  return tools.map((tool) => definitionFor(flavor, tool) as FlavorDefinitions[F]);
}

function definitionFor(flavor: SchemaFlavor, tool: FlavorSource): FlavorDefinitions[SchemaFlavor] {
  const { name, description } = tool;
  const schema = tool.inputSchema as JsonSchema;
  switch (flavor) {
    case 'anthropic':
      return { name, description, input_schema: { ...schema } };
    case 'openai':
      return { type: 'function', function: { name, description, parameters: { ...schema } } };
    case 'openai-strict':
      return { type: 'function', function: { name, description, parameters: openAIStrictSchema(schema), strict: true } };
    case 'gemini':
      return { name, description, parameters: geminiSchema({ ...schema }) };
    case 'mcp':
      return { name, description, inputSchema: { ...schema } };
    default:
      throw new TypeError(toolsConfig.badFlavor(flavor, SCHEMA_FLAVORS));
  }
}
