/**
 * Why the supervisor may set two V8 flags back to their defaults as it starts (launch.ts): V8
 * stamps code caches with a hash of its flags, and Node's built-in modules loaded after boot (net,
 * streams, os, ...) come with a code cache made under the default flags. The supervisor runs with
 * `--max-semi-space-size` (src/runtime/supervisor-client.ts), so where V8 hashes that flag every
 * built-in it loads would compile from source instead, and our own bundle's cache would be
 * rejected (bench: start). There we set the flags back once the heap exists: V8 reads them only
 * when it sets the heap up, so the young generation keeps its limit, and the flag hash is the
 * default's again. V8 leaves memory tuning flags out of the hash from Node 24.12 on (v8 commit
 * 87356585659b, nodejs/node#60069), so there nothing is set back
 * (test/unit/flag-hash.test.ts checks both against V8 on each line CI runs).
 */
import { v8 } from './lazy-builtins.js';

/** Heap size flags V8 reads only when it makes the heap; 0 is their "default" value. */
const HEAP_SETUP_FLAGS = ['--max-semi-space-size', '--min-semi-space-size'];

/** Whether this Node's V8 puts heap size flags in its code-cache flag hash: every Node before 24.12. */
export function heapFlagsInFlagHash(nodeVersion: string = process.versions.node): boolean {
  const [major = 0, minor = 0] = nodeVersion.split('.').map(Number);
  return major < 24 || (major === 24 && minor < 12);
}

/** Sets every heap setup flag this process was started with back to its default, where V8 hashes them. */
export function forgetHeapSetupFlags(execArgv: readonly string[] = process.execArgv): void {
  if (!heapFlagsInFlagHash()) return;
  for (const arg of execArgv) {
    const name = arg.split('=')[0]!;
    if (HEAP_SETUP_FLAGS.includes(name)) setV8Flags(`${name}=0`);
  }
}

type SetFlags = (flags: string) => void;

/**
 * V8's setFlagsFromString without loading node:v8 where Node still has the binding (20, 22):
 * node:v8 brings node:stream and its ~30 internal modules, and loaded before the flags are set back
 * they compile from source (~5 ms of every start; bench: start). The internal binding is the one
 * node:v8 calls; Node warns that process.binding('v8') is deprecated, so the warning is silenced
 * for the one call. Node 24 has no such binding (it throws), so before 24.12 node:v8 does it.
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
