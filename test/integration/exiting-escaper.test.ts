/**
 * "Cleaned up" means every process of the job is gone and reaped. An escaper still exiting (its
 * memory, so the job's marker in its environment, already gone; not a zombie yet) is the job's
 * until the supervisor has reaped it: the job is not reported cleaned up before.
 */
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isReaped, isRunning, see, waitForFile } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { signalIfSame } from '../helpers/signal.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';
import { waitFor } from '../../src/testing.js';

/** Per memfd: freeing it keeps the escaper exiting for tens of ms; two of them, at most a quarter of free memory. */
const HELD_MB = Math.min(1024, Math.floor(os.freemem() / 8 / (1 << 20)));
const ROUNDS = 3;

describe.each(modeRows())('an escaper still exiting when its leader ends (%s)', (mode, skip) => {
  it.skipIf(skip)('is reaped before the job is reported cleaned up', async () => {
    const runtime = await startRuntime(mode);
    for (let round = 0; round < ROUNDS; round++) {
      const pidFile = path.join(tempDir(), 'escaper');
      const job = await runtime.background({ command: `exec python3 ${FIXTURES}/slow-exit.py ${pidFile} ${HELD_MB}` });
      const escaper = see(Number(await waitForFile(pidFile)));
      expect(isRunning(escaper.pid)).toBe(true);
      expect(runtime.list().find((entry) => entry.id === job.id)?.state).toBe('running');

      // Its end closes the leader's pipe: the leader exits while the escaper is still exiting.
      expect(signalIfSame(escaper, 'SIGKILL')).toBe(true);
      const cleanedUp = () => runtime.list().find((entry) => entry.id === job.id)?.cleanedUp === true;
      expect(await waitFor(runtime, cleanedUp, 10_000)).toBe(true);
      expect(isReaped(escaper)).toBe(true);
    }
  });
});
