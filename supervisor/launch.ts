/**
 * The supervisor process's first module, bundled on its own into dist/supervisor/supervisor.launch.cjs
 * (scripts/bundle-supervisor.mjs) and started by the runtime: it sets the heap setup flags back
 * to their defaults where V8 hashes them (flag-hash.ts: so that V8 accepts the code caches), then
 * runs the supervisor bundle from its V8 code cache (code-cache.ts). Without a fitting cache the bundle compiles from
 * source, as it would without this file. HEPH_JOBS_WARM_CODE_CACHE=1 is the build's warm-up run
 * (scripts/supervisor-code-cache.mjs): the cache is rewritten at exit with what the run compiled.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runBundle } from './code-cache.js';
import { forgetHeapSetupFlags } from './flag-hash.js';

forgetHeapSetupFlags();
runBundle(path.join(path.dirname(fileURLToPath(import.meta.url)), 'supervisor.bundle.cjs'), {
  warmAtExit: process.env.HEPH_JOBS_WARM_CODE_CACHE === '1',
});
