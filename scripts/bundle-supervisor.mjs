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
 * root, the addon, node-gyp-build) is found the same way.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
await build({
  input: path.join(root, 'dist/supervisor/main.js'),
  platform: 'node',
  logLevel: 'warn',
  // Resolved at run time from the package (its prebuild lookup reads its own package.json).
  external: ['node-gyp-build'],
  output: { file: path.join(root, 'dist/supervisor/supervisor.bundle.cjs'), format: 'cjs', sourcemap: true },
});
