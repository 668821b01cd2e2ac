/**
 * Why the supervisor sets two V8 flags back to their defaults as it starts (launch.ts): V8 stamps
 * code caches with a hash of its flags, and Node's built-in modules loaded after boot (net,
 * streams, os, ...) come with a code cache made under the default flags. The supervisor runs with
 * `--max-semi-space-size` (src/runtime/supervisor-client.ts), so under Node 20 every built-in it
 * loaded was compiled from source instead, and so would our own bundle's cache be rejected
 * (bench: start). Newer V8 leaves memory tuning flags out of the hash (v8 commit 87356585659b,
 * nodejs/node#60069); on Node 20 we get the same by setting these flags back to their default
 * once the heap exists: V8 reads them only when it sets the heap up, so the young generation
 * keeps its limit, and the flag hash is the default's again
 * (test/integration/supervisor-code-cache.test.ts shows both).
 */
import v8 from 'node:v8';

/** Heap size flags V8 reads only when it makes the heap; 0 is their "default" value. */
const HEAP_SETUP_FLAGS = ['--max-semi-space-size', '--min-semi-space-size'];

/** Sets every heap setup flag this process was started with back to its default. */
export function forgetHeapSetupFlags(execArgv: readonly string[] = process.execArgv): void {
  for (const arg of execArgv) {
    const name = arg.split('=')[0]!;
    if (HEAP_SETUP_FLAGS.includes(name)) v8.setFlagsFromString(`${name}=0`);
  }
}
