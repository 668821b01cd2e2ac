/** The `heph-jobs` command line: subcommands, options, and a sentence for every bad argument. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageVersion, parseCliArgs, WATCH_INTERVAL_MS } from '../../src/cli/args.js';
import { DEFAULT_TOKENLESS_WAIT_CAP_MS, DEFAULT_WAIT_CAP_MS, waitCapFromEnv, waitCaps } from '../../src/cli/mcp-time.js';

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
    expect(ok([])).toEqual({ subcommand: 'shell', json: false, yes: false, intervalMs: WATCH_INTERVAL_MS, structured: false, commands: [], help: false, version: false });
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

  it('mcp takes --structured and --wait-cap MS (issue 24, items 1 and 2); no other subcommand does', () => {
    expect(ok(['mcp'])).toMatchObject({ structured: false });
    expect(ok(['mcp']).waitCapMs).toBeUndefined();
    expect(ok(['mcp', '--structured', '--wait-cap', '1500'])).toMatchObject({ subcommand: 'mcp', structured: true, waitCapMs: 1500 });
    expect(problem(['mcp', '--wait-cap', '99'])).toBe('--wait-cap must be a whole number of milliseconds from 100 to 600000; received "99"');
    expect(problem(['mcp', '--wait-cap', '2m'])).toBe('--wait-cap must be a whole number of milliseconds from 100 to 600000; received "2m"');
    expect(problem(['--structured'])).toBe('--structured is an option of the mcp subcommand: heph-jobs mcp --structured');
    expect(problem(['watch', '--wait-cap', '1000', '--', 'x'])).toBe('--wait-cap is an option of the mcp subcommand: heph-jobs mcp --wait-cap MS');
  });

  it('the MCP wait caps: below the named clients\' shortest timeout with a progress token, the SDK\'s 60 s without; one knob sets both', () => {
    expect(waitCaps()).toEqual({ withToken: DEFAULT_WAIT_CAP_MS, withoutToken: DEFAULT_TOKENLESS_WAIT_CAP_MS });
    expect(DEFAULT_WAIT_CAP_MS).toBeLessThan(300_000); // Codex 0.171.0 and Cursor: 300 s
    expect(DEFAULT_TOKENLESS_WAIT_CAP_MS).toBeLessThan(60_000); // the SDK client's DEFAULT_REQUEST_TIMEOUT_MSEC
    expect(waitCaps(1500)).toEqual({ withToken: 1500, withoutToken: 1500 });
    expect(waitCapFromEnv({})).toEqual({});
    expect(waitCapFromEnv({ HEPH_JOBS_MCP_WAIT_CAP_MS: ' 2500 ' })).toEqual({ capMs: 2500 });
    // Before, a bad value was taken silently as the default.
    expect(waitCapFromEnv({ HEPH_JOBS_MCP_WAIT_CAP_MS: '50s' })).toEqual({ problem: 'HEPH_JOBS_MCP_WAIT_CAP_MS must be a whole number of milliseconds from 100 to 600000; received "50s"' });
    expect(waitCapFromEnv({ HEPH_JOBS_MCP_WAIT_CAP_MS: '700000' })).toHaveProperty('problem');
  });

  it('--help and --version', () => {
    expect(ok(['--help']).help).toBe(true);
    expect(ok(['-V']).version).toBe(true);
    expect(packageVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
