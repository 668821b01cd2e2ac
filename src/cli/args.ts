/**
 * The `heph-jobs` command line: subcommands, options, usage text and version. Pure functions, so
 * every refusal of a bad argument can be checked without starting anything.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ContainmentChoice } from '../protocol/messages.js';
import { DEFAULT_TOKENLESS_WAIT_CAP_MS, DEFAULT_WAIT_CAP_MS, parseWaitCap, waitCapRule } from './mcp-time.js';

export type Subcommand = 'shell' | 'watch' | 'mcp';

export interface CliOptions {
  subcommand: Subcommand;
  /** Working directory of the jobs. Default: the current directory. */
  cwd?: string;
  /** Jobs running at once. Default: the runtime's (8). */
  maxJobs?: number;
  /** Default: the runtime's (`auto`, or `$HEPH_JOBS_CONTAINMENT`). */
  containment?: ContainmentChoice;
  /** One JSON object per line instead of report text. Default: false. */
  json: boolean;
  /** Approve every level-2 action without asking (scripts). Default: false. */
  yes: boolean;
  /** Milliseconds between two frames of `watch`. Default: 500. */
  intervalMs: number;
  /** `mcp`: results carry structuredContent and tools their outputSchema. Default: false (the report text alone). */
  structured: boolean;
  /** `mcp`: the longest a call's wait runs, in ms. Default: $HEPH_JOBS_MCP_WAIT_CAP_MS, else 240 s with a progress token and 50 s without. */
  waitCapMs?: number;
  /** `watch -- CMD...`: one command line per argument, started as jobs and watched. */
  commands: string[];
  help: boolean;
  version: boolean;
}

export type ParsedArgs = { ok: true; options: CliOptions } | { ok: false; problem: string };

/** Frames of `watch` per second: twice, as `pm2 monit` and `htop` refresh about that often. */
export const WATCH_INTERVAL_MS = 500;
const CONTAINMENTS: readonly ContainmentChoice[] = ['auto', 'cgroup', 'process-group'];
const SUBCOMMANDS: readonly Subcommand[] = ['watch', 'mcp'];

export const USAGE = `Usage:
  heph-jobs [options]                      interactive shell (reads commands from stdin when it is not a terminal)
  heph-jobs [options] watch -- CMD...      start each CMD (one argument per command line) as a job and watch them
  heph-jobs [options] mcp                  Model Context Protocol server over stdio

Options:
  --cwd DIR                  working directory of the jobs (default: the current directory)
  --max-jobs N               jobs running at once (default: 8)
  --containment MODE         auto | cgroup | process-group (default: auto, or $HEPH_JOBS_CONTAINMENT)
  --json                     one JSON object per line instead of report text (shell and watch)
  --yes, -y                  approve every action without asking (needed for level-2 commands when stdin is not a terminal)
  --interval MS              watch: milliseconds between frames (default: ${WATCH_INTERVAL_MS})
  --structured               mcp: results also carry structuredContent, tools their outputSchema (default: the report text alone)
  --wait-cap MS              mcp: longest a call's wait runs before it answers and names the call that waits on
                             (default: $HEPH_JOBS_MCP_WAIT_CAP_MS, else ${DEFAULT_WAIT_CAP_MS} with a progress token, ${DEFAULT_TOKENLESS_WAIT_CAP_MS} without)
  --help, -h                 this text
  --version, -V              the version

Every job ends with the session: quit, Ctrl-D, end of input, the MCP client disconnecting, or a signal.`;

/** Parses `argv` (without node and the script). */
export function parseCliArgs(argv: readonly string[]): ParsedArgs {
  const dashes = argv.indexOf('--');
  const before = dashes === -1 ? [...argv] : argv.slice(0, dashes);
  const after = dashes === -1 ? [] : argv.slice(dashes + 1);
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: before,
      allowPositionals: true,
      strict: true,
      options: {
        cwd: { type: 'string' },
        'max-jobs': { type: 'string' },
        containment: { type: 'string' },
        json: { type: 'boolean' },
        yes: { type: 'boolean', short: 'y' },
        interval: { type: 'string' },
        structured: { type: 'boolean' },
        'wait-cap': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'V' },
      },
    }));
  } catch (error) {
    return { ok: false, problem: (error as Error).message.replace(/\. To specify a positional argument.*$/s, '') };
  }

  const [first, ...rest] = positionals;
  let subcommand: Subcommand = 'shell';
  if (first !== undefined) {
    if (!SUBCOMMANDS.includes(first as Subcommand)) {
      return { ok: false, problem: `unknown subcommand ${JSON.stringify(first)}; the subcommands are watch and mcp (none starts the shell)` };
    }
    subcommand = first as Subcommand;
  }
  if (rest.length > 0) {
    const hint = subcommand === 'watch' ? `; put the commands after --, one argument per command line: heph-jobs watch -- ${quoteForHelp(rest.join(' '))}` : '';
    return { ok: false, problem: `unexpected argument ${JSON.stringify(rest[0])}${hint}` };
  }
  if (after.length > 0 && subcommand !== 'watch') {
    return { ok: false, problem: `only watch takes commands after --; received ${JSON.stringify(after.join(' '))}` };
  }
  const blank = after.findIndex((command) => command.trim().length === 0);
  if (blank !== -1) return { ok: false, problem: `command ${blank + 1} after -- is empty` };

  const options: CliOptions = {
    subcommand,
    json: values.json === true,
    yes: values.yes === true,
    intervalMs: WATCH_INTERVAL_MS,
    structured: values.structured === true,
    commands: after,
    help: values.help === true,
    version: values.version === true,
  };
  if (typeof values.cwd === 'string') {
    if (values.cwd.length === 0) return { ok: false, problem: '--cwd needs a directory; received an empty string' };
    options.cwd = path.resolve(values.cwd);
  }
  if (typeof values['max-jobs'] === 'string') {
    const n = wholeNumber(values['max-jobs']);
    if (n === null || n < 1 || n > 1024) return { ok: false, problem: `--max-jobs must be a whole number from 1 to 1024; received ${JSON.stringify(values['max-jobs'])}` };
    options.maxJobs = n;
  }
  if (typeof values.containment === 'string') {
    if (!CONTAINMENTS.includes(values.containment as ContainmentChoice)) {
      return { ok: false, problem: `--containment must be one of ${CONTAINMENTS.join(', ')}; received ${JSON.stringify(values.containment)}` };
    }
    options.containment = values.containment as ContainmentChoice;
  }
  if (typeof values.interval === 'string') {
    const n = wholeNumber(values.interval);
    if (n === null || n < 50 || n > 60_000) return { ok: false, problem: `--interval must be a whole number of milliseconds from 50 to 60000; received ${JSON.stringify(values.interval)}` };
    options.intervalMs = n;
  }
  if (typeof values['wait-cap'] === 'string') {
    const capMs = parseWaitCap(values['wait-cap']);
    if (capMs === null) return { ok: false, problem: `--wait-cap ${waitCapRule(values['wait-cap'])}` };
    options.waitCapMs = capMs;
  }
  const mcpOnly = (['structured', 'wait-cap'] as const).find((name) => values[name] !== undefined);
  if (mcpOnly !== undefined && subcommand !== 'mcp') return { ok: false, problem: `--${mcpOnly} is an option of the mcp subcommand: heph-jobs mcp --${mcpOnly}${mcpOnly === 'wait-cap' ? ' MS' : ''}` };
  return { ok: true, options };
}

function wholeNumber(text: string): number | null {
  return /^\d{1,9}$/.test(text.trim()) ? Number(text.trim()) : null;
}

function quoteForHelp(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** This package's version, from the package.json above this file (in src/ or dist/src/). */
export function packageVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = path.join(dir, 'package.json');
    try {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'heph-jobs' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not here: look one level up
    }
    dir = path.dirname(dir);
  }
  return 'unknown';
}
