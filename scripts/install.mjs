#!/usr/bin/env node
// @ts-check
/**
 * npm's install hook: nothing to do when a prebuilt binary in prebuilds/ loads here (the usual
 * case: linux-x64 and linux-arm64 with glibc); otherwise build the addon from source with cmake-js
 * (CMake and a C++17 compiler; no Python, and nothing is downloaded: the N-API headers come from
 * the node-api-headers package). HEPH_JOBS_BUILD_FROM_SOURCE=1 (or npm's --build-from-source)
 * skips the prebuild.
 *
 * With install scripts off (--ignore-scripts, pnpm 10, bun) this never runs, and nothing is lost
 * where a prebuild fits: supervisor/native.ts picks the prebuild by the same node-gyp-build rules.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { writeSupervisorCodeCache } from './supervisor-code-cache.mjs';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);

function say(message) {
  process.stderr.write(`heph-jobs: ${message}\n`);
}

/** The prebuild node-gyp-build would pick here, if it loads; else why not. */
function loadablePrebuild() {
  // node-gyp-build reads PREBUILDS_ONLY when it is first loaded: only prebuilds/ then, never build/.
  process.env.PREBUILDS_ONLY = '1';
  /** @type {{ path(dir: string): string }} */
  const nodeGypBuild = require('node-gyp-build');
  try {
    const file = nodeGypBuild.path(root);
    require(file);
    return { file };
  } catch (error) {
    return { reason: /** @type {Error} */ (error).message.split('\n')[0] };
  }
}

function buildFromSource() {
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  const result = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build'], { cwd: root, stdio: 'inherit' });
  if (result.error) say(`could not run cmake-js: ${result.error.message}`);
  if (result.status !== 0) {
    say(
      'building the native addon failed. Building it needs CMake (3.15 or newer) and a C++17 compiler ' +
        '(g++ or clang++) on PATH; install them and run `npm rebuild heph-jobs`.',
    );
    process.exit(result.status ?? 1);
  }
}

const forced = process.env.HEPH_JOBS_BUILD_FROM_SOURCE === '1' || process.env.npm_config_build_from_source === 'true';
if (forced) {
  say('building the native addon from source, as asked');
  buildFromSource();
} else {
  const prebuild = loadablePrebuild();
  if (prebuild.file) {
    say(`using the prebuilt native addon ${path.relative(root, prebuild.file)}`);
  } else {
    say(`no prebuilt native addon loads here (${prebuild.reason}); building it from source`);
    buildFromSource();
  }
}

// The supervisor bundle's V8 code cache for this Node: a packed package's dist/ holds the one the
// packer's Node made, which another Node rejects (harmlessly: the supervisor then compiles from
// source). Best effort and silent; in a checkout dist/ is built later, with its cache (build:ts).
if (fs.existsSync(path.join(root, 'dist/supervisor/supervisor.bundle.cjs'))) writeSupervisorCodeCache(root);
