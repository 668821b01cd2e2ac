/**
 * Issue 24, item 5: the schemas `heph-jobs mcp` serves, by default and with --structured, pass the
 * MCP Inspector's `--cli --method tools/list --strict` listing with no warning. The inspector (a
 * pinned version) is installed by npm into node_modules/.cache on the first run; where it cannot
 * be, the test is skipped with the reason printed. Negative control: a server whose output schema
 * has a `[type, "null"]` union and an untyped property gets the inspector's warnings.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers/cli.js';
import { processesWithEnv } from '../helpers/kernel.js';
import { FIXTURES } from '../helpers/runtime.js';

const run = promisify(execFile);
const INSPECTOR = '@modelcontextprotocol/inspector@2.12.0';
const CACHE = path.resolve(import.meta.dirname, '../../node_modules/.cache/heph-jobs-test/mcp-inspector-2.12.0');
const LAUNCHER = path.join(CACHE, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const INSTALL_TIMEOUT_MS = 240_000;

let unavailable: string | null = null;

beforeAll(async () => {
  if (fs.existsSync(LAUNCHER)) return;
  try {
    fs.mkdirSync(CACHE, { recursive: true });
    await run('npm', ['install', '--prefix', CACHE, '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', '--omit=dev', '--loglevel=error', INSPECTOR], {
      timeout: INSTALL_TIMEOUT_MS,
    });
    if (!fs.existsSync(LAUNCHER)) unavailable = `npm installed ${INSPECTOR} but ${LAUNCHER} is not there`;
  } catch (error) {
    unavailable = `cannot install ${INSPECTOR} into ${CACHE}: ${(error as Error).message.split('\n')[0]}`;
  }
}, INSTALL_TIMEOUT_MS + 10_000);

interface Listing {
  code: number;
  tools: { name: string; outputSchema?: unknown }[];
  stderr: string;
}

/** `inspector --cli COMMAND... --method tools/list --strict`: its exit code, the tools it listed, and its stderr. */
async function strictListing(command: string[], mark: string): Promise<Listing> {
  const args = [LAUNCHER, '--cli', '-e', `HEPH_TEST_MARK=${mark}`, ...command, '--method', 'tools/list', '--strict'];
  try {
    const { stdout, stderr } = await run(process.execPath, args, { timeout: 60_000 });
    return { code: 0, tools: (JSON.parse(stdout) as { tools: Listing['tools'] }).tools, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, tools: [], stderr: `${failed.stderr ?? ''}${failed.stdout ?? ''}` };
  }
}

/** The inspector's findings: its Warning and Error lines. */
function findings(stderr: string): string[] {
  return stderr.split('\n').filter((line) => /^(Warning|Error): /.test(line) || /^Schema portability: /.test(line));
}

describe('the MCP Inspector --strict listing', () => {
  it.each([[[] as string[]], [['--structured']]])('of heph-jobs mcp %j has no warning', async (extra, context) => {
    if (unavailable) {
      console.warn(`skipped: ${unavailable}`);
      context.skip(unavailable);
    }
    const mark = randomUUID();
    const listing = await strictListing([process.execPath, CLI, 'mcp', '--containment', 'process-group', ...extra], mark);
    expect(findings(listing.stderr), listing.stderr).toEqual([]);
    expect(listing.code, listing.stderr).toBe(0);
    expect(listing.tools.map((tool) => tool.name)).toEqual(['background', 'job_status', 'job_kill', 'job_input', 'job_restart']);
    // The listing covered the output schemas where they are served.
    for (const tool of listing.tools) expect(tool.outputSchema !== undefined).toBe(extra.includes('--structured'));
    expect(processesWithEnv(`HEPH_TEST_MARK=${mark}`)).toEqual([]); // the inspector's close ended the server
  });

  it('warns of a [type, "null"] union and an untyped property (negative control)', async (context) => {
    if (unavailable) {
      console.warn(`skipped: ${unavailable}`);
      context.skip(unavailable);
    }
    const listing = await strictListing([process.execPath, path.join(FIXTURES, 'mcp-nullable-schema.mjs')], randomUUID());
    expect(findings(listing.stderr)).toEqual(['Warning: tool "nullable"', 'Warning: tool "nullable"']);
    expect(listing.stderr).toContain('Path: outputSchema.properties.code');
    expect(listing.stderr).toContain('Path: outputSchema.properties.note');
  });
});
