/**
 * The runtime process never loads the native addon (issue 11): a fault in native code stays in
 * the supervisor. A child process imports the package, starts a runtime, runs and kills a job and
 * closes, then reads its own /proc/self/maps: no `.node` file may be mapped. The negative control
 * loads the supervisor's addon loader in the same script and must see the addon mapped.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { modeRows } from '../helpers/modes.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

/** The script: everything a host does with the library, then the mapped `.node` files, as JSON. */
function script(mode: string, loadAddon: boolean): string {
  return `
    import fs from 'node:fs';
    const { JobRuntime } = await import('heph-jobs');
    const addonFile = ${loadAddon ? "(await import('./dist/supervisor/native.js')).addonFile" : 'null'};
    const runtime = await JobRuntime.start({ containment: '${mode}', settleMs: 0 });
    const job = await runtime.background({ command: 'sleep 30' });
    const killed = await runtime.kill(job.id);
    await runtime.close();
    const mapped = fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((line) => /\\.node$/.test(line.trim()));
    console.log(JSON.stringify({ state: killed.state, cleanedUp: killed.cleanedUp, mapped, addonFile }));
  `;
}

async function mappedAddons(mode: string, loadAddon: boolean): Promise<{ state: string; cleanedUp: boolean; mapped: string[]; addonFile: string | null }> {
  // Imported by its package name, as a host does (the package resolves itself through "exports").
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script(mode, loadAddon)], { cwd: ROOT, timeout: 30_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

describe.each(modeRows())('the runtime process (%s)', (mode, skip) => {
  it.skipIf(skip)('maps no .node file after import, start, a job run and killed, and close', async () => {
    const seen = await mappedAddons(mode, false);
    expect(seen.state).toBe('killed');
    expect(seen.cleanedUp).toBe(true);
    expect(seen.mapped).toEqual([]);
  });

  it.skipIf(skip)('negative control: with the addon loader imported, the addon is mapped and seen', async () => {
    const seen = await mappedAddons(mode, true);
    expect(seen.state).toBe('killed');
    // The file the loader chose: build/Release/heph_jobs.node, a prebuild, or HEPH_JOBS_ADDON's.
    expect(seen.mapped.some((line) => line.endsWith(` ${seen.addonFile}`))).toBe(true);
  });
});
