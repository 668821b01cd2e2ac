/**
 * Lines typed in the shell become tool inputs generically from each tool's JSON Schema: the tools'
 * real schemas, and made-up ones for the shapes they do not (yet) have.
 */
import { describe, expect, it } from 'vitest';
import { commandTable } from '../../src/cli/command-table.js';
import { complete } from '../../src/cli/completion.js';
import { parseToolInput } from '../../src/cli/parse-input.js';
import { nextToken, splitCommand, tokenize } from '../../src/cli/tokenize.js';
import type { ToolLike } from '../../src/cli/tool-schema.js';
import { usageOf } from '../../src/cli/usage.js';
import { createTools, type ToolRuntime } from '../../src/index.js';

/** The real tools, over a stand-in runtime (building the tools reads only its settings). */
const tools = createTools({ settings: { maxJobs: 8, outputLines: 2000, cwd: '/', env: {} } } as unknown as ToolRuntime);
const byName = new Map(tools.all.map((tool) => [tool.name, tool]));
const background = byName.get('background')!;
const status = byName.get('job_status')!;
const kill = byName.get('job_kill')!;

const made: ToolLike = {
  name: 'job_example',
  level: 2,
  description: 'An example. Second sentence.',
  inputSchema: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      max_bytes: { type: 'integer' },
      ratio: { type: 'number' },
      text: { type: 'string' },
      close: { type: 'boolean' },
      signal: { type: 'string', enum: ['INT', 'TERM', 'KILL'] },
      tags: { type: 'array', items: { type: 'string' } },
    },
    required: ['id'],
  },
};

function input(tool: ToolLike, rest: string) {
  const parsed = parseToolInput(tool, rest);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.input;
}

function problem(tool: ToolLike, rest: string, word?: string) {
  const parsed = parseToolInput(tool, rest, word);
  if (parsed.ok) throw new Error(`accepted ${JSON.stringify(rest)} as ${JSON.stringify(parsed.input)}`);
  return parsed.problem;
}

describe('tokens', () => {
  it('quotes and escapes as a shell has them, with \\n in double quotes', () => {
    expect(tokenize(`a 'b c' "d \\"e\\" \\n" f\\ g`).map((token) => token.value)).toEqual(['a', 'b c', 'd "e" \n', 'f g']);
    expect(tokenize(`x'y'"z"`).map((token) => [token.value, token.quoted])).toEqual([['xyz', true]]);
  });

  it('reports an unclosed quote on the token, not by throwing', () => {
    expect(nextToken(`"abc`, 0)).toMatchObject({ value: 'abc', error: 'a " quote is not closed' });
    expect(nextToken(`'abc`, 0)).toMatchObject({ error: "a ' quote is not closed" });
  });

  it('splits the command word from the rest', () => {
    expect(splitCommand('  status   0 --lines 5')).toEqual({ word: 'status', rest: '0 --lines 5' });
    expect(splitCommand('quit')).toEqual({ word: 'quit', rest: '' });
  });
});

describe('tool inputs from a line', () => {
  it('background: the rest of the line is the command, exactly as typed', () => {
    expect(input(background, `npm run dev -- --port 5173 > "log file" 2>&1 &&  echo 'it''s'`)).toEqual({
      command: `npm run dev -- --port 5173 > "log file" 2>&1 &&  echo 'it''s'`,
    });
    // An unbalanced quote is the shell's business, not ours.
    expect(input(background, `echo "unclosed`)).toEqual({ command: `echo "unclosed` });
  });

  it('background: flags before the command, -- to end them', () => {
    expect(input(background, '--locks port:5173 --locks path:/tmp -- --weird-command')).toEqual({ locks: ['port:5173', 'path:/tmp'], command: '--weird-command' });
    const peer = input(background, '--stdin --timeout 30 cat');
    expect(peer.command).toBe('cat');
    expect(peer.stdin).toBe(true);
    expect(peer.timeout).toBe(30);
  });

  it('status: a job number, numbers parsed per the schema, and no id at all', () => {
    expect(input(status, '')).toEqual({});
    expect(input(status, '0 --lines 5')).toEqual({ id: 0, lines: 5 });
    expect(input(status, '--lines=7 3')).toEqual({ id: 3, lines: 7 });
    expect(problem(status, 'zero', 'status')).toMatch(/^status: a job number \(a whole number from 0 up\) comes here; received "zero"; usage: status \[ID\] \[--lines N\]/);
    expect(problem(status, '0 --lines many', 'status')).toMatch(/^status: --lines is a whole number; received "many"; usage: /);
    expect(problem(status, '0 --colour', 'status')).toMatch(/^status: unknown flag --colour \(its flags are --lines/);
    expect(problem(status, '0 1', 'status')).toMatch(/^status: unexpected argument "1"/);
  });

  it('kill: the id is required by the schema (the tool itself says so when it is missing)', () => {
    expect(input(kill, '2')).toEqual({ id: 2 });
    expect(input(kill, '')).toEqual({});
  });

  it('a JSON object is the input as it is, as the reports write calls', () => {
    expect(input(status, '{"id": 0, "lines": 100}')).toEqual({ id: 0, lines: 100 });
    expect(problem(status, '{"id": 0', 'job_status')).toMatch(/^job_status: the input is not valid JSON/);
    expect(problem(status, '{}x', 'job_status')).toMatch(/not valid JSON/);
  });

  it('every schema type: dashes or underscores, booleans bare or negated, enums any case, arrays repeated', () => {
    expect(input(made, '4 --max-bytes 100 --ratio 0.5 --text "hi there\\n" --close --signal int --tags a --tags b')).toEqual({
      id: 4,
      max_bytes: 100,
      ratio: 0.5,
      text: 'hi there\n',
      close: true,
      signal: 'INT',
      tags: ['a', 'b'],
    });
    expect(input(made, '4 --max_bytes=1 --no-close')).toEqual({ id: 4, max_bytes: 1, close: false });
    expect(input(made, '4 --close=false')).toEqual({ id: 4, close: false });
    expect(problem(made, '4 --text')).toMatch(/--text needs a value/);
    expect(problem(made, '4 --ratio 1x')).toMatch(/--ratio is a number; received "1x"/);
  });

  it('usage lines come from the schema', () => {
    expect(usageOf(made, 'example')).toBe('example ID [--max-bytes N] [--ratio N] [--text TEXT] [--close] [--signal INT|TERM|KILL] [--tags TEXT]...');
    expect(usageOf(background)).toMatch(/^background \[--locks TEXT\]\.\.\. .*CMD\.\.\.$/);
    expect(usageOf(status, 'status')).toMatch(/^status \[ID\] \[--lines N\]/);
    expect(usageOf(kill, 'kill')).toMatch(/^kill ID/);
  });
});

describe('command words and completion', () => {
  const table = commandTable([...tools.all, made]);

  it('every tool by its name, and by its name without job_', () => {
    expect(table.get('status')).toBe(status);
    expect(table.get('kill')).toBe(kill);
    expect(table.get('example')).toBe(made);
    expect(table.get('job_status')).toBe(status);
  });

  it('completes command words, job numbers where an id goes, and flags', () => {
    expect(complete('sta', table, [0, 1])).toEqual([['status '], 'sta']);
    expect(complete('', table, [])[0]).toEqual(expect.arrayContaining(['background', 'status', 'kill', '/job-kill', 'help', 'quit', 'watch']));
    expect(complete('kill ', table, [0, 1, 12])).toEqual([['0', '1', '12'], '']);
    expect(complete('status 1', table, [0, 1, 12])).toEqual([['1', '12'], '1']);
    expect(complete('status 1 ', table, [0, 1, 12])).toEqual([[], '']);
    expect(complete('/job-kill ', table, [3])).toEqual([['3 '], '']);
    expect(complete('status 0 --li', table, [0])).toEqual([['--lines '], '--li']);
    expect(complete('background np', table, [0])).toEqual([[], 'np']);
    expect(complete('help ki', table, [])).toEqual([['kill '], 'ki']);
  });
});
