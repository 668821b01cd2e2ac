/**
 * supervisor/flag-hash.ts, in fresh Nodes started as the runtime starts its supervisor (with
 * `--max-semi-space-size=1`): V8 rejects a code cache made under the default flags (the cost it
 * undoes, Node 20) unless the flag is set back to its default, and setting it back leaves the
 * young generation's limit in place (V8 read it when it made the heap). Oracles: V8's verdict
 * (cachedDataRejected) and V8's size of the new space after a burst of short-lived garbage.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SUPERVISOR_NODE_FLAGS } from '../../src/runtime/supervisor-client.js';

const BUILT = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/supervisor/flag-hash.js')).href;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-flag-hash-'));
const CACHE = path.join(dir, 'cache');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const SOURCE = 'function f() { return 1; } f();';

/** Runs `body` (ESM, `forget` in scope) in a fresh Node with `flags`; returns what it printed, parsed. */
function fresh(flags: string[], body: string): unknown {
  const code = `const { forgetHeapSetupFlags: forget } = await import(${JSON.stringify(BUILT)});
const vm = await import('node:vm'); const fs = await import('node:fs'); const v8 = await import('node:v8');
${body}`;
  const { NODE_OPTIONS: _flags, ...env } = process.env;
  return JSON.parse(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', code], { env, encoding: 'utf8' }));
}

const verdict = (forget: boolean) =>
  `${forget ? 'forget();' : ''} const s = new vm.Script(${JSON.stringify(SOURCE)}, { cachedData: fs.readFileSync(${JSON.stringify(CACHE)}) }); console.log(JSON.stringify(s.cachedDataRejected));`;

const NEW_SPACE = `forget(); let keep = [];
for (let i = 0; i < 2e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 1000) keep = []; }
console.log(JSON.stringify(v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size));`;

describe('heap setup flags and the flag hash', () => {
  it('a cache made under the default flags is rejected under --max-semi-space-size=1, accepted once the flag is set back', () => {
    fresh([], `const s = new vm.Script(${JSON.stringify(SOURCE)}); fs.writeFileSync(${JSON.stringify(CACHE)}, s.createCachedData()); console.log('null');`);
    expect(fresh([], verdict(false))).toBe(false); // the control: same flags, accepted
    expect(fresh(['--max-semi-space-size=1'], verdict(false))).toBe(true);
    expect(fresh(['--max-semi-space-size=1'], verdict(true))).toBe(false);
  });

  it("with every flag the supervisor starts with, V8's flag hash is the default's once they are set back (Node's built-ins keep their code cache)", () => {
    fresh([], `const s = new vm.Script(${JSON.stringify(SOURCE)}); fs.writeFileSync(${JSON.stringify(CACHE)}, s.createCachedData()); console.log('null');`);
    expect(fresh(SUPERVISOR_NODE_FLAGS, verdict(false))).toBe(true); // the control: before they are set back
    expect(fresh(SUPERVISOR_NODE_FLAGS, verdict(true))).toBe(false);
  });

  it('setting the flags back loads no node:v8 (its streams would compile before the flags are back) and prints no warning', () => {
    const code = `const { forgetHeapSetupFlags: forget } = await import(${JSON.stringify(BUILT)});
const before = process.moduleLoadList.includes('NativeModule v8');
forget();
console.log(JSON.stringify({ before, after: process.moduleLoadList.includes('NativeModule v8') }));`;
    const { NODE_OPTIONS: _flags, ...env } = process.env;
    const run = spawnSync(process.execPath, [...SUPERVISOR_NODE_FLAGS, '--input-type=module', '-e', code], { env, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ before: false, after: false });
    // The control: the oracle sees node:v8 once something loads it.
    const loaded = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('node:v8'); console.log(process.moduleLoadList.includes('NativeModule v8'))"], { env, encoding: 'utf8' });
    expect(loaded.stdout.trim()).toBe('true');
  });

  it('the young generation keeps the 1 MB semi-space limit after the flag is set back', () => {
    const limited = fresh(['--max-semi-space-size=1'], NEW_SPACE) as number;
    const unlimited = fresh([], NEW_SPACE) as number; // the control: V8's default grows it
    expect(limited).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(unlimited).toBeGreaterThan(2 * 1024 * 1024);
  });
});
