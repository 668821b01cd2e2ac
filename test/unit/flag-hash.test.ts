/**
 * supervisor/flag-hash.ts, in fresh Nodes started as the runtime starts its supervisor (with
 * `--max-semi-space-size=1`), checked against this line's V8: it rejects a code cache made under
 * the default flags exactly where heapFlagsInFlagHash says (before Node 24.12), and accepts it once
 * the launcher's forgetHeapSetupFlags ran, on every line; the young generation keeps its limit
 * either way. Oracles: V8's verdict (cachedDataRejected) and V8's size of the new space under a
 * burst of short-lived garbage.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SUPERVISOR_NODE_FLAGS } from '../../src/runtime/supervisor-client.js';
import { heapFlagsInFlagHash } from '../../supervisor/flag-hash.js';
import { BOUNDED } from '../helpers/bounded.js';

const BUILT = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/supervisor/flag-hash.js')).href;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-flag-hash-'));
const CACHE = path.join(dir, 'cache');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const SOURCE = 'function f() { return 1; } f();';
const HASHED = heapFlagsInFlagHash();
const LINE = `Node ${process.versions.node} (V8 ${HASHED ? 'hashes' : 'leaves out'} heap flags)`;

/** Runs `body` (ESM, `forget` in scope) in a fresh Node with `flags`; returns what it printed, parsed. */
function fresh(flags: string[], body: string): unknown {
  const code = `const { forgetHeapSetupFlags: forget } = await import(${JSON.stringify(BUILT)});
const vm = await import('node:vm'); const fs = await import('node:fs'); const v8 = await import('node:v8');
${body}`;
  const { NODE_OPTIONS: _flags, ...env } = process.env;
  return JSON.parse(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', code], { ...BOUNDED, env, encoding: 'utf8' }));
}

const verdict = (forget: boolean) =>
  `${forget ? 'forget();' : ''} const s = new vm.Script(${JSON.stringify(SOURCE)}, { cachedData: fs.readFileSync(${JSON.stringify(CACHE)}) }); console.log(JSON.stringify(s.cachedDataRejected));`;

// The median of samples taken through the burst: V8 14 (Node 26) can hold a page or two over the
// limit for a moment, so a single sample at the end sometimes reads up to 3x the limit.
const NEW_SPACE = `forget(); let keep = []; const sizes = [];
for (let i = 0; i < 2e6; i++) {
  keep.push({ i, s: 'x' + i }); if (keep.length > 1000) keep = [];
  if (i % 1e5 === 99999) sizes.push(v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size);
}
console.log(JSON.stringify(sizes.sort((a, b) => a - b)[sizes.length >> 1]));`;

const writeDefaultCache = () =>
  fresh([], `const s = new vm.Script(${JSON.stringify(SOURCE)}); fs.writeFileSync(${JSON.stringify(CACHE)}, s.createCachedData()); console.log('null');`);

describe(`heap setup flags and the flag hash, on ${LINE}`, () => {
  it('heapFlagsInFlagHash: every Node before 24.12 (measured on 20.20, 22.12, 22.23, 24.0, 24.11.1 against 24.12, 24.13, 24.22, 25.0, 26.0, 26.12)', () => {
    for (const version of ['20.19.0', '22.12.0', '22.23.5', '24.0.0', '24.11.1']) expect(heapFlagsInFlagHash(version), version).toBe(true);
    for (const version of ['24.12.0', '24.22.3', '25.0.0', '26.0.0', '26.12.1']) expect(heapFlagsInFlagHash(version), version).toBe(false);
  });

  it('a cache made under the default flags is rejected under --max-semi-space-size=1 exactly where V8 hashes heap flags, and accepted once forgetHeapSetupFlags ran', () => {
    writeDefaultCache();
    expect(fresh([], verdict(false))).toBe(false); // the control: same flags, accepted
    expect(fresh(['--no-opt'], verdict(false))).toBe(true); // the control: a flag every V8 hashes, rejected
    expect(fresh(['--max-semi-space-size=1'], verdict(false))).toBe(HASHED);
    expect(fresh(['--max-semi-space-size=1'], verdict(true))).toBe(false);
  });

  it("with every flag the supervisor starts with, V8's flag hash is the default's once forgetHeapSetupFlags ran (Node's built-ins keep their code cache)", () => {
    writeDefaultCache();
    expect(fresh(SUPERVISOR_NODE_FLAGS, verdict(false))).toBe(HASHED); // before: what this line's V8 does with them
    expect(fresh(SUPERVISOR_NODE_FLAGS, verdict(true))).toBe(false);
  });

  it("forgetHeapSetupFlags prints no warning, and loads node:v8 (its streams would compile before the flags are back) only where flags must be set back without process.binding('v8') (Node 24.0-24.11)", () => {
    const { NODE_OPTIONS: _flags, ...env } = process.env;
    const probe = "try { console.log(typeof process.binding('v8').setFlagsFromString === 'function') } catch { console.log(false) }";
    const binding = spawnSync(process.execPath, ['--no-deprecation', '-e', probe], { ...BOUNDED, env, encoding: 'utf8' }).stdout.trim() === 'true';
    const code = `const { forgetHeapSetupFlags: forget } = await import(${JSON.stringify(BUILT)});
const before = process.moduleLoadList.includes('NativeModule v8');
forget();
console.log(JSON.stringify({ before, after: process.moduleLoadList.includes('NativeModule v8') }));`;
    const run = spawnSync(process.execPath, [...SUPERVISOR_NODE_FLAGS, '--input-type=module', '-e', code], { ...BOUNDED, env, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ before: false, after: HASHED && !binding });
    // The control: the oracle sees node:v8 once something loads it.
    const loaded = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('node:v8'); console.log(process.moduleLoadList.includes('NativeModule v8'))"], { ...BOUNDED, env, encoding: 'utf8' });
    expect(loaded.stdout.trim()).toBe('true');
  });

  it('the young generation keeps the 1 MB semi-space limit after forgetHeapSetupFlags', () => {
    const limited = fresh(['--max-semi-space-size=1'], NEW_SPACE) as number;
    const unlimited = fresh([], NEW_SPACE) as number; // the control: V8's default grows it
    expect(limited).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(unlimited).toBeGreaterThan(2 * 1024 * 1024);
  });
});
