/**
 * A small validator for the subset of JSON Schema the tool inputs use (object, string, integer,
 * number, boolean, array; required; additionalProperties false; bounds). A model's input is
 * checked here before anything runs, and every problem is one sentence (src/wording/) that names
 * the field, says what is accepted and shows what was received. No dependency: the schemas are
 * ours and small.
 */
import { missingField, notAccepted, unknownField } from '../wording/index.js';
import type { JsonSchema } from '../facts.js';

export type Validation<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Checks `value` against `schema`; the first problem found, as a sentence fragment. */
export function validate<T>(schema: JsonSchema, value: unknown): Validation<T> {
  const input = numbersFromText(schema, withoutNulls(value));
  const problem = check(schema, input, '');
  return problem === null ? { ok: true, value: input as T } : { ok: false, problem };
}

/**
 * A field sent as null is a field left out. OpenAI's strict mode lists every property in
 * `required` and makes the optional ones nullable (src/tools/flavors.ts), so a model in that mode
 * sends `"lines": null` for "no lines given"; this is the one place that reads it so.
 */
function withoutNulls(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== null));
}

/** A whole number, or a decimal number, written as text (no sign but "-", no exponent, no blanks). */
const NUMERAL = { integer: /^-?\d{1,16}$/, number: /^-?\d{1,16}(?:\.\d{1,16})?$/ } as const;

/**
 * A number field sent as its decimal text (`"id": "0"`) is that number: models write ids as
 * strings often enough, and there is only one way to read the text. Anything else in a string
 * (`"0.5"` for a whole number, `"1e3"`, `" 0"`) is left for the check to refuse.
 */
function numbersFromText(schema: JsonSchema, value: unknown): unknown {
  if (schema.type !== 'object' || value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const properties = schema.properties ?? {};
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [field, text] of Object.entries(out)) {
    const type = Object.prototype.hasOwnProperty.call(properties, field) ? properties[field]!.type : undefined;
    if (typeof text === 'string' && (type === 'integer' || type === 'number') && NUMERAL[type].test(text)) out[field] = Number(text);
  }
  return out;
}

function check(schema: JsonSchema, value: unknown, path: string): string | null {
  const name = path === '' ? 'the input' : path;
  const wrong = () => notAccepted(name, schema, value);
  switch (schema.type) {
    case 'object': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return wrong();
      const properties = schema.properties ?? {};
      const record = value as Record<string, unknown>;
      if (schema.additionalProperties === false) {
        for (const key of Object.keys(record)) {
          if (!Object.prototype.hasOwnProperty.call(properties, key)) return unknownField(path, key, Object.keys(properties));
        }
      }
      for (const field of schema.required ?? []) {
        if (record[field] === undefined) return missingField(join(path, field));
      }
      for (const [field, property] of Object.entries(properties)) {
        if (record[field] === undefined) continue;
        const problem = check(property, record[field], join(path, field));
        if (problem !== null) return problem;
      }
      return null;
    }
    case 'string': {
      if (typeof value !== 'string') return wrong();
      if (schema.enum && !schema.enum.includes(value)) return wrong();
      if (schema.minLength !== undefined && value.length < schema.minLength) return wrong();
      if (schema.maxLength !== undefined && value.length > schema.maxLength) return wrong();
      return null;
    }
    case 'integer':
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return wrong();
      if (schema.type === 'integer' && !Number.isInteger(value)) return wrong();
      if (schema.minimum !== undefined && value < schema.minimum) return wrong();
      if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) return wrong();
      if (schema.maximum !== undefined && value > schema.maximum) return wrong();
      return null;
    }
    case 'boolean':
      return typeof value === 'boolean' ? null : wrong();
    case 'array': {
      if (!Array.isArray(value)) return wrong();
      if (schema.minItems !== undefined && value.length < schema.minItems) return wrong();
      if (schema.maxItems !== undefined && value.length > schema.maxItems) return wrong();
      if (schema.items) {
        for (let i = 0; i < value.length; i++) {
          const problem = check(schema.items, value[i], `${path}[${i}]`);
          if (problem !== null) return problem;
        }
      }
      return null;
    }
    default:
      return null;
  }
}

function join(path: string, field: string): string {
  return path === '' ? field : `${path}.${field}`;
}
