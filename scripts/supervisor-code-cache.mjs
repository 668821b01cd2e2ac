// @ts-check
/**
 * Writes the supervisor bundle's V8 code cache (supervisor/code-cache.ts) for the Node running this.
 * Run by the build (scripts/bundle-supervisor.mjs) and at install (scripts/install.mjs: a packed
 * package's dist was built by another Node, whose cache this one would reject). Two steps, each in
 * a child with no flags of its own (V8 stamps the cache with a hash of its flags; the supervisor's
 * hash as the default ones: supervisor/flag-hash.ts):
 *   1. the cold cache: the bundle compiled, not run (its top-level code);
 *   2. the warm-up: a real runtime starts a real supervisor (HEPH_JOBS_WARM_CODE_CACHE=1), says
 *      hello and closes it; the supervisor rewrites the cache at exit with every function its start
 *      compiled (about a tenth of its start here; bench: start). Best effort: where no supervisor
 *      can start (no addon yet), the cold cache stays.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const WARM_UP_LIMIT_MS = 30_000;

/** @param {string} root @param {string} code ESM @param {NodeJS.ProcessEnv} extra */
function runClean(root, code, extra = {}) {
  const { NODE_OPTIONS: _flags, ...env } = process.env;
  return spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd: root, env: { ...env, ...extra }, encoding: 'utf8', timeout: WARM_UP_LIMIT_MS });
}

/** @param {string} root the package root @returns {{ ok: true, warm: boolean } | { ok: false, reason: string }} */
export function writeSupervisorCodeCache(root) {
  const module = path.join(root, 'dist/supervisor/code-cache.js');
  const bundle = path.join(root, 'dist/supervisor/supervisor.bundle.cjs');
  if (!fs.existsSync(module) || !fs.existsSync(bundle)) return { ok: false, reason: 'the supervisor is not built' };
  const cold = runClean(root, `const m = await import(${JSON.stringify(pathToFileURL(module).href)}); m.writeCodeCache(${JSON.stringify(bundle)});`);
  if (cold.error) return { ok: false, reason: cold.error.message };
  if (cold.status !== 0) return { ok: false, reason: cold.stderr.trim().split('\n').slice(-3).join(' ') };
  const index = pathToFileURL(path.join(root, 'dist/src/index.js')).href;
  const warm = runClean(
    root,
    `const { JobRuntime } = await import(${JSON.stringify(index)}); const runtime = await JobRuntime.start(); await runtime.capabilities(); await runtime.close();`,
    { HEPH_JOBS_WARM_CODE_CACHE: '1' },
  );
  return { ok: true, warm: !warm.error && warm.status === 0 };
}
