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

/** What the shell needs of a tool (a `ToolDefinition` is one). */
export interface ToolLike {
  name: string;
  level: number;
  description: string;
  inputSchema: object;
}

interface PropertySchema {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  items?: PropertySchema;
  description?: string;
}

interface ObjectSchema {
  properties?: Record<string, PropertySchema>;
  required?: readonly string[];
}

/** The property a bare whole number fills. */
export const ID_PROPERTY = 'id';
/** The property the rest of the line fills, raw (quotes and all, as the shell will see them). */
export const REST_PROPERTY = 'command';

/** The shell's own commands, besides the tools. */
export const BUILTINS = ['help', 'watch', 'quit', 'exit', '/job-kill'] as const;

export type ParsedInput = { ok: true; input: Record<string, unknown> } | { ok: false; problem: string };

// --- tokens ---------------------------------------------------------------------------------------

export interface Token {
  /** The word with quotes and escapes resolved. */
  value: string;
  /** Where it starts and ends in the line. */
  start: number;
  end: number;
  /** Any part of it was quoted or escaped (a quoted "--x" is a value, not a flag). */
  quoted: boolean;
  /** An unterminated quote or a trailing backslash. */
  error?: string;
}

/**
 * The next shell-like word at or after `from`: '...' literal; "..." with the escapes \" \\ \$ \` and
 * \n \t \r (so `input 0 --text "y\n"` sends a line); \x outside quotes is x.
 */
export function nextToken(text: string, from: number): Token | null {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  if (i >= text.length) return null;
  const start = i;
  let value = '';
  let quoted = false;
  while (i < text.length && !/\s/.test(text[i]!)) {
    const c = text[i]!;
    if (c === "'") {
      quoted = true;
      const close = text.indexOf("'", i + 1);
      if (close === -1) return { value: value + text.slice(i + 1), start, end: text.length, quoted, error: "a ' quote is not closed" };
      value += text.slice(i + 1, close);
      i = close + 1;
    } else if (c === '"') {
      quoted = true;
      i++;
      for (;;) {
        if (i >= text.length) return { value, start, end: text.length, quoted, error: 'a " quote is not closed' };
        const d = text[i]!;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < text.length && '"\\$`ntr'.includes(text[i + 1]!)) {
          const next = text[i + 1]!;
          value += next === 'n' ? '\n' : next === 't' ? '\t' : next === 'r' ? '\r' : next;
          i += 2;
        } else {
          value += d;
          i++;
        }
      }
    } else if (c === '\\') {
      quoted = true;
      if (i + 1 >= text.length) return { value, start, end: text.length, quoted, error: 'the line ends with a backslash' };
      value += text[i + 1];
      i += 2;
    } else {
      value += c;
      i++;
    }
  }
  return { value, start, end: i, quoted };
}

/** Every word of `text` (for commands that take no raw rest). */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  for (let token = nextToken(text, 0); token; token = nextToken(text, token.end)) tokens.push(token);
  return tokens;
}

/** The command word and the text after it. */
export function splitCommand(line: string): { word: string; rest: string } {
  const trimmed = line.replace(/^\s+/, '');
  const match = /^(\S+)(?:\s+([\s\S]*))?$/.exec(trimmed);
  return { word: match?.[1] ?? '', rest: match?.[2] ?? '' };
}

// --- the tools as commands ------------------------------------------------------------------------

function schemaOf(tool: ToolLike): ObjectSchema {
  return tool.inputSchema as ObjectSchema;
}

function propertiesOf(tool: ToolLike): Record<string, PropertySchema> {
  return schemaOf(tool).properties ?? {};
}

function typeOf(property: PropertySchema): string {
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== 'null') : property.type;
  if (typeof type === 'string') return type;
  return property.enum ? 'string' : 'any';
}

/** `max_bytes`, `maxBytes`, `max-bytes` are one name. */
function normalName(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

function findProperty(properties: Record<string, PropertySchema>, name: string): string | undefined {
  const wanted = normalName(name);
  return Object.keys(properties).find((key) => normalName(key) === wanted);
}

/** `--max-bytes`: how a property is written as a flag. */
export function flagName(property: string): string {
  return `--${property.replace(/_/g, '-').replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}`;
}

/** The command words for `tools`: each tool's name, and the name without `job_` where that is free. */
export function commandTable<T extends ToolLike>(tools: readonly T[]): Map<string, T> {
  const table = new Map<string, T>();
  for (const tool of tools) table.set(tool.name, tool);
  const taken = new Set<string>([...BUILTINS, ...table.keys()]);
  for (const tool of tools) {
    if (!tool.name.startsWith('job_')) continue;
    const alias = tool.name.slice(4);
    if (alias.length > 0 && !taken.has(alias)) {
      table.set(alias, tool);
      taken.add(alias);
    }
  }
  return table;
}

/** The word a person types for `tool` (the short alias when it has one). */
export function shortWord(tool: ToolLike, table: Map<string, ToolLike>): string {
  for (const [word, entry] of table) if (entry === tool && word !== tool.name) return word;
  return tool.name;
}

function placeholder(name: string, property: PropertySchema): string {
  if (property.enum && property.enum.length > 0 && property.enum.length <= 6) return property.enum.map(String).join('|');
  switch (typeOf(property)) {
    case 'integer':
    case 'number':
      return 'N';
    case 'boolean':
      return '';
    case 'array':
      return property.items ? placeholder(name, property.items) : 'VALUE';
    case 'object':
      return 'JSON';
    default:
      return name === REST_PROPERTY ? 'CMD' : 'TEXT';
  }
}

/** `status [ID] [--lines N]`, `background [--locks TEXT]... CMD...`, from the schema. */
export function usageOf(tool: ToolLike, word = tool.name): string {
  const properties = propertiesOf(tool);
  const required = new Set(schemaOf(tool).required ?? []);
  const parts = [word];
  if (ID_PROPERTY in properties) parts.push(required.has(ID_PROPERTY) ? 'ID' : '[ID]');
  for (const [name, property] of Object.entries(properties)) {
    if (name === ID_PROPERTY || name === REST_PROPERTY) continue;
    const value = placeholder(name, property);
    const flag = `${flagName(name)}${value ? ` ${value}` : ''}`;
    const repeat = typeOf(property) === 'array' ? '...' : '';
    parts.push(required.has(name) ? `${flag}${repeat}` : `[${flag}]${repeat}`);
  }
  if (REST_PROPERTY in properties) parts.push(required.has(REST_PROPERTY) ? 'CMD...' : '[CMD...]');
  return parts.join(' ');
}

/** The flags a tool accepts, for messages. */
function flagList(tool: ToolLike): string {
  const names = Object.keys(propertiesOf(tool)).filter((name) => name !== ID_PROPERTY && name !== REST_PROPERTY);
  return names.length === 0 ? 'it takes no flags' : `its flags are ${names.map(flagName).join(', ')}`;
}

/** The first sentence of a description, for one-line help. */
export function firstSentence(text: string): string {
  const match = /^[\s\S]*?[.!?](?=\s|$)/.exec(text.trim());
  return (match?.[0] ?? text).replace(/\s+/g, ' ').trim();
}

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
      if (key === undefined) return fail(`unknown flag --${name} (${flagList(tool)})`);
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

// --- completion -----------------------------------------------------------------------------------

/**
 * Tab completion (readline's completer contract): command words first; then job numbers where a
 * job id goes, and flag names after `--`.
 */
export function complete(line: string, table: Map<string, ToolLike>, jobIds: readonly number[]): [string[], string] {
  const [hits, current] = candidates(line, table, jobIds);
  // One candidate: complete the word and the space after it, as bash does.
  return [hits.length === 1 ? [`${hits[0]} `] : hits, current];
}

function candidates(line: string, table: Map<string, ToolLike>, jobIds: readonly number[]): [string[], string] {
  const words = [...BUILTINS, ...table.keys()].sort();
  if (!/\s/.test(line.replace(/^\s+/, ''))) {
    const partial = line.trimStart();
    return [words.filter((word) => word.startsWith(partial)), partial];
  }
  const { word, rest } = splitCommand(line);
  const current = /(\S*)$/.exec(line)?.[1] ?? '';
  const before = rest.slice(0, rest.length - current.length);
  const ids = jobIds.map(String);
  if (word === 'help') return [words.filter((w) => w.startsWith(current)), current];
  if (word === '/job-kill') return before.trim() === '' ? [ids.filter((id) => id.startsWith(current)), current] : [[], current];
  const tool = table.get(word);
  if (!tool) return [[], current];
  const properties = propertiesOf(tool);
  if (current.startsWith('-')) {
    const flags = Object.keys(properties)
      .filter((name) => name !== ID_PROPERTY && name !== REST_PROPERTY)
      .map(flagName);
    return [flags.filter((flag) => flag.startsWith(current)), current];
  }
  // A job number goes where no positional has been given yet (flags and their values aside).
  if (ID_PROPERTY in properties && !(REST_PROPERTY in properties)) {
    const parsed = parseToolInput(tool, before, word);
    if (parsed.ok && parsed.input[ID_PROPERTY] === undefined) return [ids.filter((id) => id.startsWith(current)), current];
  }
  return [[], current];
}
