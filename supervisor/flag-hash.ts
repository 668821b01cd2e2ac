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
import { v8 } from './lazy-builtins.js';

/** Heap size flags V8 reads only when it makes the heap; 0 is their "default" value. */
const HEAP_SETUP_FLAGS = ['--max-semi-space-size', '--min-semi-space-size'];

/** Sets every heap setup flag this process was started with back to its default. */
export function forgetHeapSetupFlags(execArgv: readonly string[] = process.execArgv): void {
  for (const arg of execArgv) {
    const name = arg.split('=')[0]!;
    if (HEAP_SETUP_FLAGS.includes(name)) setV8Flags(`${name}=0`);
  }
}

type SetFlags = (flags: string) => void;

/**
 * V8's setFlagsFromString without loading node:v8: that module brings node:stream and its ~30
 * internal modules, and loaded before the flags are set back they compile from source (~5 ms of
 * every start; bench: start). The internal binding is the one node:v8 calls; Node warns that
 * process.binding('v8') is deprecated, so the warning is silenced for the one call. Where the
 * binding is gone (a later Node), node:v8 does it.
 */
function setV8Flags(flags: string): void {
  const quiet = process.noDeprecation;
  let fromBinding: SetFlags | undefined;
  try {
    process.noDeprecation = true;
    const binding = (process as unknown as { binding(name: string): { setFlagsFromString?: unknown } }).binding('v8');
    if (typeof binding.setFlagsFromString === 'function') fromBinding = binding.setFlagsFromString as SetFlags;
  } catch {
    // No such binding here.
  } finally {
    process.noDeprecation = quiet;
  }
  if (fromBinding) fromBinding(flags);
  else v8().setFlagsFromString(flags);
}
