/**
 * A small validator for the subset of JSON Schema the tool inputs use (object, string, integer,
 * number, boolean, array; required; additionalProperties false; bounds). A model's input is
 * checked here before anything runs, and every problem is one sentence that names the field, says
 * what is accepted and shows what was received. No dependency: the schemas are ours and small.
 */

export interface JsonSchema {
  type?: 'object' | 'string' | 'integer' | 'number' | 'boolean' | 'array';
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: readonly string[];
  additionalProperties?: boolean;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  /** Greater than this, not equal. */
  exclusiveMinimum?: number;
  maximum?: number;
  /** One of these values exactly (strings). */
  enum?: readonly string[];
  examples?: readonly unknown[];
}

export type Validation<T> = { ok: true; value: T } | { ok: false; problem: string };

/** How a received value is shown in a message: short, and never the whole of a long string. */
export function showValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const shown = value.length > 60 ? `${JSON.stringify(value.slice(0, 60))}… (${value.length} characters)` : JSON.stringify(value);
    return `the string ${shown}`;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? `the number ${String(value)}` : String(value);
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function article(noun: string): string {
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

/** What a schema accepts, as words: "a whole number from 0 to 2000", "an array of at most 32 strings". */
export function expectation(schema: JsonSchema): string {
  switch (schema.type) {
    case 'string': {
      if (schema.enum) return `one of ${schema.enum.map((value) => JSON.stringify(value)).join(', ')}`;
      const { minLength: min, maxLength: max } = schema;
      if (min !== undefined && min > 0 && max !== undefined) return `a string of ${min} to ${max} characters`;
      if (min !== undefined && min > 0) return `a non-empty string`;
      if (max !== undefined) return `a string of at most ${max} characters`;
      return 'a string';
    }
    case 'integer':
    case 'number': {
      const noun = schema.type === 'integer' ? 'whole number' : 'number';
      const { minimum: min, maximum: max, exclusiveMinimum: above } = schema;
      if (above !== undefined && max !== undefined) return `${article(noun)} above ${above} and up to ${max}`;
      if (above !== undefined) return `${article(noun)} above ${above}`;
      if (min !== undefined && max !== undefined) return `${article(noun)} from ${min} to ${max}`;
      if (min !== undefined) return `${article(noun)} from ${min} up`;
      if (max !== undefined) return `${article(noun)} up to ${max}`;
      return article(noun);
    }
    case 'boolean':
      return 'true or false';
    case 'array': {
      const item = schema.items ? plural(expectation(schema.items)) : 'values';
      if (schema.maxItems !== undefined) return `an array of at most ${schema.maxItems} ${item}`;
      return `an array of ${item}`;
    }
    case 'object':
      return 'a JSON object';
    default:
      return 'any value';
  }
}

/** "a string of 1 to 9 characters" → "strings of 1 to 9 characters". */
function plural(phrase: string): string {
  return phrase.replace(/^(?:a|an) (\w+)/, (_, noun: string) => `${noun}s`);
}

/** The accepted shape of an object schema in one line: `{"id"?: whole number, "lines"?: ...}`. */
export function describeAccepted(schema: JsonSchema): string {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const shape = expectation(property).replace(/^(?:a|an) /, '');
    return `${JSON.stringify(name)}${required.has(name) ? '' : '?'}: ${shape}`;
  });
  return `{${fields.join(', ')}}`;
}

/** Checks `value` against `schema`; the first problem found, as a sentence fragment. */
export function validate<T>(schema: JsonSchema, value: unknown): Validation<T> {
  const problem = check(schema, value, '');
  return problem === null ? { ok: true, value: value as T } : { ok: false, problem };
}

function check(schema: JsonSchema, value: unknown, path: string): string | null {
  const name = path === '' ? 'the input' : path;
  const wrong = () => `${name} must be ${expectation(schema)}; received ${showValue(value)}`;
  switch (schema.type) {
    case 'object': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return wrong();
      const properties = schema.properties ?? {};
      const record = value as Record<string, unknown>;
      if (schema.additionalProperties === false) {
        for (const key of Object.keys(record)) {
          if (!Object.prototype.hasOwnProperty.call(properties, key)) {
            const accepted = Object.keys(properties).map((field) => JSON.stringify(field)).join(', ');
            return `${path === '' ? '' : `${path}: `}unknown field ${JSON.stringify(key)} (the accepted fields are ${accepted || 'none'})`;
          }
        }
      }
      for (const field of schema.required ?? []) {
        if (record[field] === undefined) return `${join(path, field)} is required and missing`;
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
