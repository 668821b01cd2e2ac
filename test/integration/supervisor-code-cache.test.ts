/**
 * The supervisor starts from the code cache the build made (supervisor/launch.ts,
 * supervisor/code-cache.ts), with its real flags; with a corrupt cache file it starts all the
 * same, compiled from source, and runs jobs. The oracle is the supervisor's own report of V8's
 * verdict (its diagnostics reply) and the job's output.
 *
 * The corrupt cache replaces the built one for the length of one test (restored after it): a
 * supervisor that another test file starts meanwhile compiles from source, which is the fallback
 * under test and changes nothing it does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { supervisorDiagnostics } from '../../src/testing.js';
import { supervisorEntry } from '../../src/runtime/supervisor-client.js';
import { codeCachePath } from '../../supervisor/code-cache.js';
import { startAutoRuntime, waitForOutput } from '../helpers/runtime.js';

const BUNDLE = path.join(path.dirname(supervisorEntry()), 'supervisor.bundle.cjs');
const CACHE = codeCachePath(BUNDLE);

/** Replaces the cache file in one step (rename), so a supervisor starting meanwhile reads one whole file. */
function replaceCache(bytes: Buffer): void {
  fs.writeFileSync(`${CACHE}.test`, bytes);
  fs.renameSync(`${CACHE}.test`, CACHE);
}


describe('supervisor code cache', () => {
  it('the runtime starts the launcher, and its supervisor compiles the bundle from the cache the build made (its heap flags set back: flag-hash.ts)', async () => {
    expect(path.basename(supervisorEntry())).toBe('supervisor.launch.cjs');
    const runtime = await startAutoRuntime();
    expect((await supervisorDiagnostics(runtime)).codeCache).toBe('accepted');
  });

  it('with a corrupt cache file the supervisor starts, compiled from source, and runs jobs', async () => {
    const good = fs.readFileSync(CACHE);
    try {
      // The right header (so our own check passes it on) over garbage: V8 must refuse it.
      replaceCache(Buffer.concat([good.subarray(0, 65), Buffer.alloc(good.length - 65, 0xa5)]));
      const runtime = await startAutoRuntime();
      expect((await supervisorDiagnostics(runtime)).codeCache).toBe('rejected');
      const job = await runtime.background({ command: 'echo from-a-supervisor-without-its-cache' });
      await waitForOutput(runtime, job.id, 'from-a-supervisor-without-its-cache');
    } finally {
      replaceCache(good);
    }
    // The control: the same start with the cache restored uses it.
    const after = await startAutoRuntime();
    expect((await supervisorDiagnostics(after)).codeCache).toBe('accepted');
  });
});
