/**
 * The README's MCP client configurations, parsed as each client parses them: the JSON files as
 * JSON (VS Code's `servers` with `type: "stdio"`, Cursor's `mcpServers`), Codex's TOML table by a
 * small reader of the subset it uses (its `# from a checkout:` alternatives included), and each
 * `claude mcp add` line split into argv as a shell would. Every command they name must exist in
 * the package: `heph-jobs` is package.json's bin, whose file is built; `node` runs exactly that
 * file of a checkout; the arguments are ones `heph-jobs` accepts for its `mcp` subcommand.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCliArgs } from '../../src/cli/args.js';
import { CLIENT_FIELDS } from '../../src/cli/mcp-client-fields.js';
import { DEFAULT_TOKENLESS_WAIT_CAP_MS, DEFAULT_WAIT_CAP_MS } from '../../src/cli/mcp-time.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const BIN = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin;
/** Where the README says a checkout is. */
const CHECKOUT = '/path/to/heph-jobs';

interface Invocation {
  client: string;
  command: string;
  args: string[];
}

function mcpSection(): string {
  const start = README.indexOf('\n## MCP server\n');
  const end = README.indexOf('\n## ', start + 1);
  expect(start).toBeGreaterThan(-1);
  return README.slice(start, end === -1 ? undefined : end);
}

function blocks(section: string, language: string): string[] {
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].filter((match) => match[1] === language).map((match) => match[2]!);
}

/** Shell words of one line (quotes and a trailing `# comment` as sh reads them; no expansions). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      if (close === -1) throw new Error(`unclosed ${c} in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, close);
      i = close;
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === '#' && word === null) {
      break;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** `claude mcp add [--scope S] [-e K=V] NAME -- COMMAND ARGS...` */
function claudeInvocation(argv: string[]): Invocation {
  expect(argv.slice(0, 3)).toEqual(['claude', 'mcp', 'add']);
  const dashes = argv.indexOf('--');
  expect(dashes).toBeGreaterThan(3);
  const options = argv.slice(3, dashes);
  const name = options.pop();
  expect(name).toBe('heph-jobs');
  for (let i = 0; i < options.length; i += 2) {
    expect(['--scope', '-s', '--env', '-e', '--transport', '-t']).toContain(options[i]);
    if (options[i] === '--scope' || options[i] === '-s') expect(['local', 'project', 'user']).toContain(options[i + 1]);
    if (options[i] === '--transport' || options[i] === '-t') expect(options[i + 1]).toBe('stdio');
  }
  const [command, ...args] = argv.slice(dashes + 1);
  return { client: 'Claude Code', command: command!, args };
}

/** TOML's subset Codex's table uses: `[a.b]`, `key = "string"`, `key = ["strings"]`, `key = true`, comments. */
function readToml(text: string): { tables: Record<string, Record<string, unknown>>; alternatives: Record<string, Record<string, unknown>> } {
  const tables: Record<string, Record<string, unknown>> = {};
  const alternatives: Record<string, Record<string, unknown>> = {};
  let table: string | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^\[([A-Za-z0-9_.-]+)\]$/.exec(line);
    if (header) {
      table = header[1]!;
      tables[table] = {};
      alternatives[table] = {};
      continue;
    }
    // A value is a basic string, an array of them or a boolean: their TOML and JSON spellings are the same here.
    const pair = /^([A-Za-z0-9_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|\[[^\]]*\]|true|false)\s*(?:#\s*(.*))?$/.exec(line);
    if (!pair || table === null) throw new Error(`not in the TOML subset: ${raw}`);
    const [, key, value, comment] = pair;
    tables[table]![key!] = JSON.parse(value!);
    const alternative = comment && /^from a checkout: (.+)$/.exec(comment);
    if (alternative) alternatives[table]![key!] = JSON.parse(alternative[1]!);
  }
  return { tables, alternatives };
}

/** What is wrong with running `command args` as the heph-jobs MCP server; empty when nothing is. */
function invocationProblems({ command, args }: Pick<Invocation, 'command' | 'args'>): string[] {
  const entry = BIN['heph-jobs'];
  if (!entry) return ['package.json has no heph-jobs bin'];
  const built = path.join(ROOT, entry);
  const problems: string[] = [];
  let cliArgs: string[];
  if (command === 'heph-jobs') {
    cliArgs = args;
  } else if (command === 'node') {
    if (args[0] !== path.posix.join(CHECKOUT, entry)) problems.push(`node runs ${args[0]}, not the bin ${path.posix.join(CHECKOUT, entry)}`);
    cliArgs = args.slice(1);
  } else {
    return [`${command} is neither the package's bin (heph-jobs) nor node running it`];
  }
  if (!fs.existsSync(built)) problems.push(`${entry} is not built (npm run build:ts)`);
  else if (!fs.readFileSync(built, 'utf8').startsWith('#!/usr/bin/env node\n')) problems.push(`${entry} has no node shebang`);
  const workspace = os.tmpdir(); // what ${workspaceFolder} becomes
  const parsed = parseCliArgs(cliArgs.map((arg) => arg.replaceAll('${workspaceFolder}', workspace)));
  if (!parsed.ok) problems.push(`heph-jobs refuses ${cliArgs.join(' ')}: ${parsed.problem}`);
  else if (parsed.options.subcommand !== 'mcp') problems.push(`${cliArgs.join(' ')} is not the mcp subcommand`);
  return problems;
}

function readmeInvocations(): Invocation[] {
  const section = mcpSection();
  const invocations: Invocation[] = [];
  for (const block of blocks(section, 'sh')) {
    for (const line of block.split('\n').filter((text) => text.startsWith('claude mcp add'))) invocations.push(claudeInvocation(shellWords(line)));
  }
  for (const block of blocks(section, 'toml')) {
    const { tables, alternatives } = readToml(block);
    expect(Object.keys(tables)).toEqual(['mcp_servers.heph-jobs']);
    const server = tables['mcp_servers.heph-jobs']!;
    invocations.push({ client: 'Codex', command: server.command as string, args: server.args as string[] });
    const checkout = { ...server, ...alternatives['mcp_servers.heph-jobs'] };
    if (Object.keys(alternatives['mcp_servers.heph-jobs']!).length > 0) {
      invocations.push({ client: 'Codex (from a checkout)', command: checkout.command as string, args: checkout.args as string[] });
    }
  }
  for (const block of blocks(section, 'json')) {
    const config = JSON.parse(block) as { servers?: Record<string, Record<string, unknown>>; mcpServers?: Record<string, Record<string, unknown>> };
    expect(Object.keys(config)).toHaveLength(1);
    const servers = config.servers ?? config.mcpServers!;
    expect(Object.keys(servers)).toEqual(['heph-jobs']);
    const server = servers['heph-jobs']!;
    if (config.servers) expect(server.type).toBe('stdio'); // VS Code's file names the transport
    expect(typeof server.command).toBe('string');
    expect(Array.isArray(server.args) && server.args.every((arg) => typeof arg === 'string')).toBe(true);
    invocations.push({ client: config.servers ? 'VS Code' : 'Cursor', command: server.command as string, args: server.args as string[] });
  }
  return invocations;
}

describe("the README's MCP configurations", () => {
  const invocations = readmeInvocations();

  it('cover Claude Code, Codex, VS Code and Cursor, installed and from a checkout', () => {
    expect(new Set(invocations.map((invocation) => invocation.client.split(' (')[0]))).toEqual(new Set(['Claude Code', 'Codex', 'VS Code', 'Cursor']));
    expect(new Set(invocations.map((invocation) => invocation.command))).toEqual(new Set(['heph-jobs', 'node']));
    expect(mcpSection()).not.toMatch(/npx heph-jobs|Claude Desktop/);
  });

  it.each(invocations.map((invocation) => [invocation.client, `${invocation.command} ${invocation.args.join(' ')}`, invocation]))(
    '%s: %s starts the package’s MCP server',
    (_client, _line, invocation) => {
      expect(invocationProblems(invocation as Invocation)).toEqual([]);
    },
  );

  // Negative controls: the checks catch the old configuration, a mistyped path, a wrong
  // subcommand, a bad option, and a line a shell would split differently.
  it('reject npx, a path that is not the bin, another subcommand and an unknown option', () => {
    expect(invocationProblems({ command: 'npx', args: ['heph-jobs', 'mcp'] })).toHaveLength(1);
    expect(invocationProblems({ command: 'node', args: [`${CHECKOUT}/dist/src/cli/mian.js`, 'mcp'] })).toHaveLength(1);
    expect(invocationProblems({ command: 'heph-jobs', args: ['watch'] })).toHaveLength(1);
    expect(invocationProblems({ command: 'heph-jobs', args: ['mcp', '--port', '80'] })).toHaveLength(1);
    expect(shellWords(`claude mcp add heph-jobs -- node '/a b/main.js' mcp  # note`)).toEqual(['claude', 'mcp', 'add', 'heph-jobs', '--', 'node', '/a b/main.js', 'mcp']);
    expect(() => readToml('[mcp_servers.x]\nargs = [mcp]')).toThrow();
  });
});

describe("the README's MCP section says what the server does (issue 24)", () => {
  const section = mcpSection().replace(/\s+/g, ' ');

  it('the default caps, the knob and the flags as the code has them', () => {
    expect(section).toContain(`The cap is ${DEFAULT_WAIT_CAP_MS / 1000} s for a request that carries a progress token`);
    expect(section).toContain(`and ${DEFAULT_TOKENLESS_WAIT_CAP_MS / 1000} s for one without`);
    expect(section).toContain('`--wait-cap MS` or `HEPH_JOBS_MCP_WAIT_CAP_MS`');
    expect(parseCliArgs(['mcp', '--structured', '--wait-cap', '1000'])).toMatchObject({ ok: true, options: { structured: true, waitCapMs: 1000 } });
  });

  it('the text alone by default, structuredContent only with --structured, and every client field named', () => {
    expect(section).toMatch(/No tool declares an `outputSchema` and no result carries `structuredContent` unless the server runs with `--structured`/);
    expect(section).not.toMatch(/Each result also carries `structuredContent`/);
    for (const { field } of CLIENT_FIELDS) expect(section).toContain(`\`${field}\``);
  });
});
