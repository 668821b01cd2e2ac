// @ts-check
/**
 * Writes the supervisor bundle's V8 code cache (supervisor/code-cache.ts) for the Node running this,
 * in a child process with no flags of its own: V8 stamps the cache with a hash of its flags, and the
 * supervisor's V8 reports the default flags (supervisor/launch.ts). Run by the build
 * (scripts/bundle-supervisor.mjs) and at install (scripts/install.mjs: a packed package's dist was
 * built by another Node, whose cache this one would reject).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** @param {string} root the package root @returns {{ ok: true } | { ok: false, reason: string }} */
export function writeSupervisorCodeCache(root) {
  const module = path.join(root, 'dist/supervisor/code-cache.js');
  const bundle = path.join(root, 'dist/supervisor/supervisor.bundle.cjs');
  if (!fs.existsSync(module) || !fs.existsSync(bundle)) return { ok: false, reason: 'the supervisor is not built' };
  const { NODE_OPTIONS: _flags, ...env } = process.env;
  const code = `import(${JSON.stringify(pathToFileURL(module).href)}).then((m) => m.writeCodeCache(${JSON.stringify(bundle)}))`;
  const result = spawnSync(process.execPath, ['-e', code], { env, encoding: 'utf8' });
  if (result.error) return { ok: false, reason: result.error.message };
  if (result.status !== 0) return { ok: false, reason: result.stderr.trim().split('\n').slice(-3).join(' ') };
  return { ok: true };
}
