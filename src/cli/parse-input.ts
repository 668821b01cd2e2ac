/**
 * How a line typed in the shell becomes a tool's input, generically from the tool's JSON Schema,
 * so a tool added to `createTools(...).all` is a shell command with no change here:
 *
 * - the command word is the tool's name, or its name without `job_` (`status`, `kill`, `input`);
 * - a whole number fills the `id` property (`status 0`);
 * - the rest of the line, exactly as typed, fills the `command` property (`background npm run dev`);
 * - every other property is a flag: `--name value` (`--max-bytes` or `--max_bytes`), numbers parsed
 *   per the schema's type, booleans as bare flags (`--no-name` for false), arrays by repeating the flag;
 * - a JSON object instead of arguments is the input as it is: `job_status {"id": 0, "lines": 5}`, as
 *   the reports themselves write it.
 */
import { nextToken } from './tokenize.js';
import { closest } from './suggest.js';
import { findProperty, flagName, flagProperties, ID_PROPERTY, propertiesOf, REST_PROPERTY, typeOf, type PropertySchema, type ToolLike } from './tool-schema.js';
import { flagList, usageOf } from './usage.js';

export type ParsedInput = { ok: true; input: Record<string, unknown> } | { ok: false; problem: string };

/**
 * The input of `tool` from the text after its command word. Only the shape is checked here (a
 * number where the schema says integer, a known flag); the tool itself validates the rest and says
 * what is wrong in its own words.
 */
export function parseToolInput(tool: ToolLike, rest: string, word = tool.name): ParsedInput {
  const usage = `usage: ${usageOf(tool, word)}`;
  const fail = (problem: string): ParsedInput => ({ ok: false, problem: `${word}: ${problem}; ${usage}` });
  const trimmed = rest.trim();
  if (trimmed.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(trimmed);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return fail('a JSON input must be an object');
      return { ok: true, input: value as Record<string, unknown> };
    } catch (error) {
      return fail(`the input is not valid JSON (${(error as Error).message})`);
    }
  }
  const properties = propertiesOf(tool);
  const input: Record<string, unknown> = {};
  let flagsDone = false;
  let pos = 0;
  for (;;) {
    const token = nextToken(rest, pos);
    if (!token) break;
    pos = token.end;
    const isFlag = !flagsDone && !token.quoted && token.value.startsWith('--');
    if (isFlag && token.value === '--') {
      if (REST_PROPERTY in properties) {
        const text = rest.slice(pos).trim();
        if (text.length > 0) input[REST_PROPERTY] = text;
        break;
      }
      flagsDone = true;
      continue;
    }
    if (isFlag) {
      let name = token.value.slice(2);
      let inline: string | undefined;
      const eq = name.indexOf('=');
      if (eq !== -1) {
        inline = name.slice(eq + 1);
        name = name.slice(0, eq);
      }
      let key = findProperty(properties, name);
      let negated = false;
      if (key === undefined && name.startsWith('no-')) {
        const positive = findProperty(properties, name.slice(3));
        if (positive !== undefined && typeOf(properties[positive]!) === 'boolean') {
          key = positive;
          negated = true;
        }
      }
      if (key === undefined) {
        const guess = closest(`--${name}`, flagProperties(tool).map(flagName));
        return fail(`unknown flag --${name} (${guess === null ? '' : `did you mean ${guess}? `}${flagList(tool)})`);
      }
      const property = properties[key]!;
      const type = typeOf(property);
      if (type === 'boolean') {
        if (negated) input[key] = false;
        else if (inline === undefined) input[key] = true;
        else if (/^(true|yes|1)$/i.test(inline)) input[key] = true;
        else if (/^(false|no|0)$/i.test(inline)) input[key] = false;
        else return fail(`${flagName(key)} is true or false; received ${JSON.stringify(inline)}`);
        continue;
      }
      let text = inline;
      if (text === undefined) {
        const value = nextToken(rest, pos);
        if (!value) return fail(`${flagName(key)} needs a value`);
        if (value.error) return fail(value.error);
        pos = value.end;
        text = value.value;
      }
      const converted = convert(key, type === 'array' ? (property.items ?? {}) : property, text);
      if (!converted.ok) return fail(converted.problem);
      if (type === 'array') {
        const list = Array.isArray(input[key]) ? (input[key] as unknown[]) : [];
        list.push(converted.value);
        input[key] = list;
      } else {
        input[key] = converted.value;
      }
      continue;
    }
    if (ID_PROPERTY in properties && input[ID_PROPERTY] === undefined && !(REST_PROPERTY in properties)) {
      if (!/^\d+$/.test(token.value)) return fail(`a job number (a whole number from 0 up) comes here; received ${JSON.stringify(token.value)}`);
      input[ID_PROPERTY] = Number(token.value);
      continue;
    }
    if (REST_PROPERTY in properties && input[REST_PROPERTY] === undefined) {
      input[REST_PROPERTY] = rest.slice(token.start).trim();
      break;
    }
    if (token.error) return fail(token.error);
    return fail(`unexpected argument ${JSON.stringify(token.value)}`);
  }
  return { ok: true, input };
}

function convert(name: string, property: PropertySchema, text: string): { ok: true; value: unknown } | { ok: false; problem: string } {
  switch (typeOf(property)) {
    case 'integer':
    case 'number': {
      const ok = property.type === 'integer' || typeOf(property) === 'integer' ? /^-?\d+$/.test(text) : /^-?(\d+\.?\d*|\.\d+)(e-?\d+)?$/i.test(text);
      if (!ok) return { ok: false, problem: `${flagName(name)} is ${typeOf(property) === 'integer' ? 'a whole number' : 'a number'}; received ${JSON.stringify(text)}` };
      return { ok: true, value: Number(text) };
    }
    case 'object': {
      try {
        return { ok: true, value: JSON.parse(text) };
      } catch {
        return { ok: false, problem: `${flagName(name)} is a JSON object; received ${JSON.stringify(text)}` };
      }
    }
    default: {
      // An enum is matched without regard to case: `--signal int` is INT.
      const match = property.enum?.find((option) => typeof option === 'string' && option.toLowerCase() === text.toLowerCase());
      return { ok: true, value: match ?? text };
    }
  }
}
