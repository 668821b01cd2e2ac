/** The `heph-jobs` command line: subcommands, options, and a sentence for every bad argument. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageVersion, parseCliArgs, WATCH_INTERVAL_MS } from '../../src/cli/args.js';

function ok(argv: string[]) {
  const parsed = parseCliArgs(argv);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.options;
}

function problem(argv: string[]): string {
  const parsed = parseCliArgs(argv);
  if (parsed.ok) throw new Error(`accepted ${JSON.stringify(argv)}`);
  return parsed.problem;
}

describe('parseCliArgs', () => {
  it('no subcommand is the shell, with the defaults', () => {
    expect(ok([])).toEqual({ subcommand: 'shell', json: false, yes: false, intervalMs: WATCH_INTERVAL_MS, commands: [], help: false, version: false });
  });

  it('reads every option, before or after the subcommand', () => {
    const options = ok(['--cwd', 'sub', 'mcp', '--max-jobs', '3', '--containment', 'process-group', '--json', '-y']);
    expect(options).toMatchObject({ subcommand: 'mcp', cwd: path.resolve('sub'), maxJobs: 3, containment: 'process-group', json: true, yes: true });
  });

  it('watch takes its commands after --, one argument per command line, flags in them included', () => {
    const options = ok(['watch', '--interval', '100', '--', 'npm run dev -- --port 5173', 'sleep 1']);
    expect(options).toMatchObject({ subcommand: 'watch', intervalMs: 100, commands: ['npm run dev -- --port 5173', 'sleep 1'] });
  });

  it('says what is wrong with a bad argument', () => {
    expect(problem(['serve'])).toBe('unknown subcommand "serve"; the subcommands are watch and mcp (none starts the shell)');
    expect(problem(['watch', 'npm', 'run', 'dev'])).toBe(`unexpected argument "npm"; put the commands after --, one argument per command line: heph-jobs watch -- 'npm run dev'`);
    expect(problem(['mcp', '--', 'x'])).toBe('only watch takes commands after --; received "x"');
    expect(problem(['--max-jobs', '0'])).toBe('--max-jobs must be a whole number from 1 to 1024; received "0"');
    expect(problem(['--max-jobs', 'many'])).toBe('--max-jobs must be a whole number from 1 to 1024; received "many"');
    expect(problem(['--containment', 'docker'])).toBe('--containment must be one of auto, cgroup, process-group; received "docker"');
    expect(problem(['--interval', '5'])).toMatch(/^--interval must be a whole number of milliseconds from 50 to 60000; received "5"$/);
    expect(problem(['--frobnicate'])).toMatch(/Unknown option '--frobnicate'/);
    expect(problem(['watch', '--', ' '])).toBe('command 1 after -- is empty');
  });

  it('--help and --version', () => {
    expect(ok(['--help']).help).toBe(true);
    expect(ok(['-V']).version).toBe(true);
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
