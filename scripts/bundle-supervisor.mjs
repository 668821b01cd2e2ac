#!/usr/bin/env node
/**
 * Bundles the compiled supervisor (dist/supervisor/main.js and the ~45 modules it imports, msgpackr
 * included) into one file beside it, dist/supervisor/supervisor.bundle.cjs. The supervisor starts
 * with every runtime, and loading one file instead of dozens is most of what its start costs beyond
 * Node's own boot (bench: start). The bundle is CommonJS: an ES module entry makes Node set up its
 * ES module loader first (about a sixth of a first call here), the CommonJS one is ready at boot;
 * rolldown turns `import.meta.url` into the file's URL. The runtime starts the bundle when it
 * exists, else main.js.
 * The bundle sits in the same folder as main.js, so what it finds relative to itself (the package
 * root, the addon) is found the same way.
 * ASCII only and no comments: V8 keeps a script's whole source on the heap (lazy functions are
 * compiled from it later), and one non-ASCII character (a "×" in a comment) makes it a two-byte
 * string: 535 KB of the supervisor's heap for a 267 KB file, now 195 KB (bench: memory, -0.5 MB
 * resident; the source map still points into the commented sources).
 *
 * Then: the bundle's last line names its SHA-256, the launcher (supervisor/launch.ts, what the runtime
 * starts) is bundled beside it as supervisor.launch.cjs, and the bundle's V8 code cache is written
 * (scripts/supervisor-code-cache.mjs; see supervisor/code-cache.ts).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';
import { writeSupervisorCodeCache } from './supervisor-code-cache.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
await build({
  input: path.join(root, 'dist/supervisor/main.js'),
  platform: 'node',
  logLevel: 'warn',
  output: { file: path.join(root, 'dist/supervisor/supervisor.bundle.cjs'), format: 'cjs', sourcemap: true, charset: 'ascii', comments: false },
});

// The hash the code cache is checked against (supervisor/code-cache.ts: BUNDLE_HASH_PREFIX).
const bundleFile = path.join(root, 'dist/supervisor/supervisor.bundle.cjs');
const bundled = fs.readFileSync(bundleFile, 'utf8');
fs.writeFileSync(bundleFile, `${bundled}\n//# heph-jobs-bundle ${crypto.createHash('sha256').update(bundled).digest('hex')}\n`);

await build({
  input: path.join(root, 'dist/supervisor/launch.js'),
  platform: 'node',
  logLevel: 'warn',
  output: { file: path.join(root, 'dist/supervisor/supervisor.launch.cjs'), format: 'cjs' },
});

// Without a cache the supervisor still starts (compiling from source), so a failure here only warns.
const made = writeSupervisorCodeCache(root);
if (!made.ok) process.stderr.write(`heph-jobs build: no code cache for the supervisor (it starts without one, slower): ${made.reason}\n`);
