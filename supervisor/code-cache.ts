/**
 * The supervisor bundle's V8 code cache: the bytecode of the bundle, compiled once at build time
 * (scripts/bundle-supervisor.mjs, and again at install for the installing Node: scripts/install.mjs)
 * and handed to V8 when the supervisor starts (launch.ts), so its start does not parse and compile
 * the 260 KB bundle (bench: start). Node 20 has no module.enableCompileCache, so the bundle is
 * compiled here with vm.Script and run with the CommonJS wrapper's five arguments.
 *
 * A cache that does not fit is never an error: V8 rejects data made by another V8 version or with
 * other flags (it checks both), and we reject data made for another bundle ourselves (V8 checks
 * only the source's length): the build writes the bundle's SHA-256 as its last line and the same
 * hash as the cache file's first line. The bundle then compiles from source, as without a cache.
 * No crypto at start: the hash is compared as text (loading node:crypto costs ms).
 */
import fs from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import type { Replies } from '../src/protocol/messages.js';

/** How the bundle was compiled: from the cache, from source because V8 or we refused the cache, or from source with none there. */
export type CodeCacheState = Replies['diagnostics']['codeCache'];

/** Where runBundle leaves the state for the bundle it runs (another copy of this module): a global, as nothing else is shared. */
const STATE_KEY = Symbol.for('heph-jobs.supervisor.codeCache');

/** How this process's supervisor bundle was compiled; 'none' when it was not started through runBundle (main.js). */
export function codeCacheState(): CodeCacheState {
  return (globalThis as { [STATE_KEY]?: CodeCacheState })[STATE_KEY] ?? 'none';
}

/** The bundle's last line: `//# heph-jobs-bundle <sha256 hex>`, the hash of everything before it. */
export const BUNDLE_HASH_PREFIX = '//# heph-jobs-bundle ';
const HASH_LENGTH = 64;

/** The cache file beside the bundle. */
export function codeCachePath(bundleFile: string): string {
  return `${bundleFile}.cache`;
}

/** The hash the bundle's last line names, or null when it has none. */
export function bundleHash(source: string): string | null {
  const at = source.lastIndexOf(BUNDLE_HASH_PREFIX);
  if (at < 0) return null;
  const hash = source.slice(at + BUNDLE_HASH_PREFIX.length, at + BUNDLE_HASH_PREFIX.length + HASH_LENGTH);
  return /^[0-9a-f]{64}$/.test(hash) ? hash : null;
}

/** The bundle wrapped as Node wraps a CommonJS module, so that one compile gives the module's function. */
function compile(file: string, source: string, cachedData: Buffer | undefined): vm.Script {
  return new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
  });
}

/** The V8 data in the cache file when it was made for this bundle (its first line is the bundle's hash). */
function cachedDataFor(cacheFile: string, hash: string | null): { state: 'none' } | { state: 'rejected' } | { state: 'found'; data: Buffer } {
  let data: Buffer;
  try {
    data = fs.readFileSync(cacheFile);
  } catch {
    return { state: 'none' };
  }
  const fits = hash !== null && data.length > HASH_LENGTH + 1 && data.toString('latin1', 0, HASH_LENGTH) === hash && data[HASH_LENGTH] === 0x0a;
  return fits ? { state: 'found', data: data.subarray(HASH_LENGTH + 1) } : { state: 'rejected' };
}

/**
 * Compiles the bundle (with its cache when one fits) and runs it as the CommonJS module `file`,
 * whose `require` resolves from the bundle's folder (the addon).
 * With `warmAtExit`, the cache is rewritten when the process exits, with every function this run
 * compiled (the build's warm-up run: scripts/supervisor-code-cache.mjs).
 */
export function runBundle(file: string, { warmAtExit = false } = {}): CodeCacheState {
  const source = fs.readFileSync(file, 'utf8');
  const hash = bundleHash(source);
  const cache = cachedDataFor(codeCachePath(file), hash);
  const script = compile(file, source, cache.state === 'found' ? cache.data : undefined);
  const state: CodeCacheState = cache.state === 'found' ? (script.cachedDataRejected ? 'rejected' : 'accepted') : cache.state;
  (globalThis as { [STATE_KEY]?: CodeCacheState })[STATE_KEY] = state;
  if (warmAtExit && hash !== null) {
    process.once('exit', () => {
      try {
        writeCacheFile(file, hash, script.createCachedData());
      } catch {
        // The build keeps the cache it wrote before the warm-up run.
      }
    });
  }
  const dir = path.dirname(file);
  const module = new Module(file);
  module.filename = file;
  module.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dir);
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(module.exports, module.exports, Module.createRequire(file), module, file, dir);
  return state;
}

function writeCacheFile(file: string, hash: string, data: Buffer): void {
  const temporary = `${codeCachePath(file)}.${process.pid}`;
  fs.writeFileSync(temporary, Buffer.concat([Buffer.from(`${hash}\n`, 'latin1'), data]));
  fs.renameSync(temporary, codeCachePath(file)); // never a half-written cache under the real name
}

/**
 * Writes the cache for `file` (a bundle whose last line names its hash) without running it. Run it
 * in a process whose flags hash as the supervisor's do (none of its own; see flag-hash.ts): V8
 * stamps the data with a hash of the flags and rejects it under others. Only the top-level code is
 * compiled here, which in a one-scope bundle is every module's initialisation; functions compile
 * when first called, so the build then replaces it with a warm one (runBundle's warmAtExit).
 */
export function writeCodeCache(file: string): void {
  const source = fs.readFileSync(file, 'utf8');
  const hash = bundleHash(source);
  if (hash === null) throw new Error(`${file} has no ${BUNDLE_HASH_PREFIX.trim()} line`);
  writeCacheFile(file, hash, compile(file, source, undefined).createCachedData());
}
