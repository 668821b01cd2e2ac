/**
 * The supervisor bundle's code cache (supervisor/code-cache.ts, as built in dist/) on a small bundle
 * of our own: a cache made for the bundle is used; a missing, garbage, truncated or stale one is
 * not, and the bundle still runs, compiled from source. The oracle of "used" is V8's own verdict
 * (vm.Script's cachedDataRejected), and of "ran" what the bundle's code left behind. Each load runs
 * in a fresh Node, as the supervisor does: within one process V8 finds a source it compiled before
 * in its own compilation cache and never looks at the data.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BUNDLE_HASH_PREFIX, codeCachePath } from '../../supervisor/code-cache.js';
import { BOUNDED } from '../helpers/bounded.js';

const BUILT = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/supervisor/code-cache.js')).href;

/** Runs `call` (an expression over the built module `m`) in a fresh Node; returns what it printed. */
function inFreshNode(call: string): string {
  const code = `import(${JSON.stringify(BUILT)}).then((m) => { const result = ${call}; console.log(JSON.stringify({ result, ran: globalThis.codeCacheTestRan ?? null })); })`;
  const { NODE_OPTIONS: _flags, ...env } = process.env;
  return execFileSync(process.execPath, ['-e', code], { ...BOUNDED, env, encoding: 'utf8' });
}

const writeCodeCache = (file: string): void => void inFreshNode(`m.writeCodeCache(${JSON.stringify(file)})`);
function runBundle(file: string): { result: string; ran: string | null } {
  return JSON.parse(inFreshNode(`m.runBundle(${JSON.stringify(file)})`));
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A bundle that records `mark` when it runs, with the hash line the build writes. */
function bundleSource(mark: string): string {
  const code = `globalThis.codeCacheTestRan = ${JSON.stringify(mark)}; module.exports.file = __filename; function lazy() { return 1; } lazy();\n`;
  return `${code}${BUNDLE_HASH_PREFIX}${crypto.createHash('sha256').update(code).digest('hex')}\n`;
}

function writeBundle(mark: string, dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-code-cache-'))): string {
  if (!dirs.includes(dir)) dirs.push(dir);
  const file = path.join(dir, 'supervisor.bundle.cjs');
  fs.writeFileSync(file, bundleSource(mark));
  return file;
}

describe('supervisor bundle code cache', () => {
  it('a cache made for the bundle is accepted and the bundle runs', () => {
    const file = writeBundle('made');
    writeCodeCache(file);
    expect(fs.statSync(codeCachePath(file)).size).toBeGreaterThan(65);
    expect(runBundle(file)).toEqual({ result: 'accepted', ran: 'made' });
  });

  it('without a cache the bundle compiles from source and runs', () => {
    const file = writeBundle('none');
    expect(runBundle(file)).toEqual({ result: 'none', ran: 'none' });
  });

  it('a garbage, a truncated or an empty cache is rejected and the bundle still runs', () => {
    const file = writeBundle('corrupt');
    writeCodeCache(file);
    const good = fs.readFileSync(codeCachePath(file));
    const header = good.subarray(0, 65);
    const corruptions = {
      garbage: Buffer.concat([header, crypto.randomBytes(good.length - 65)]),
      truncated: good.subarray(0, 65 + 16),
      empty: Buffer.alloc(0),
      'no header': good.subarray(65),
    };
    for (const [name, bytes] of Object.entries(corruptions)) {
      fs.writeFileSync(codeCachePath(file), bytes);
      expect(runBundle(file), name).toEqual({ result: 'rejected', ran: 'corrupt' });
    }
  });

  it("a stale cache (another build's bundle of the same length) is rejected, though V8 alone would take it", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-code-cache-'));
    const file = writeBundle('old-1', dir);
    writeCodeCache(file);
    const stale = fs.readFileSync(codeCachePath(file));
    writeBundle('new-2', dir); // same length, other code, other hash line
    expect(fs.readFileSync(file, 'utf8').length).toBe(bundleSource('old-1').length);
    // Negative control: V8 checks only the source's length, so it would run the old build's code.
    const wrapped = (source: string) => `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
    const bare = new vm.Script(wrapped(fs.readFileSync(file, 'utf8')), { filename: file, cachedData: stale.subarray(65) });
    expect(bare.cachedDataRejected).toBe(false);
    // Ours refuses it by the hash line, and the new code runs.
    expect(runBundle(file)).toEqual({ result: 'rejected', ran: 'new-2' });
  });
});
