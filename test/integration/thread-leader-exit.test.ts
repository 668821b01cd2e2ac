/**
 * A process whose main thread ended (pthread_exit) while another thread runs on: /proc's stat says
 * Z and its environment cannot be read through its pid, yet it is alive. It is still the job's: an
 * escaper of that kind is found and stopped by the cleanup, and a leader of that kind by a kill.
 * Kernel truth: a FIFO every process of the job holds reaches EOF.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { waitFor } from '../../src/testing.js';

const FIXTURE = path.join(FIXTURES, 'leader-thread-exit.py');

describe.each(modeRows())('a process whose main thread ended (%s)', (mode, skip) => {
  it.skipIf(skip)('as an escaper, is stopped by the cleanup before the job is reported cleaned up', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    const said = path.join(tempDir(), 'said');
    fs.writeFileSync(said, '');
    try {
      // The leader waits until the escaper's main thread is gone, then ends: the cleanup begins.
      const command = `${oracle.prefix}(setsid python3 ${FIXTURE} > ${said} &); until grep -q gone ${said}; do sleep 0.02; done`;
      const job = await runtime.background({ command });
      expect(await waitFor(runtime, () => runtime.list().find((listed) => listed.id === job.id)?.cleanedUp === true, 30_000)).toBe(true);
      await oracle.waitEof(5_000);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('as the leader, is stopped by a kill, whole', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    try {
      const job = await runtime.background({ command: `${oracle.prefix}exec python3 ${FIXTURE}` });
      await waitForOutput(runtime, job.id, 'leader gone');
      // The negative control: it holds the FIFO while it lives.
      expect(oracle.closed).toBe(false);
      const killed = await runtime.kill(job.id);
      expect(killed.cleanedUp).toBe(true);
      await oracle.waitEof(5_000);
    } finally {
      oracle.dispose();
    }
  });
});
