/**
 * Issue 25: the memory limit of all jobs together (allJobsMemoryBytes) holds with 8 jobs each
 * under its own limit: once they pass it, the job using the most is stopped whole and says why,
 * and the others run on. Both containment modes; kernel truth: each job's FIFO at EOF.
 */
import { describe, expect, it } from 'vitest';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, waitForOutput } from '../helpers/runtime.js';
import { waitFor } from '../../src/testing.js';
import type { JobEvent } from '../../src/index.js';

const MB = 1 << 20;

/** Grows a bytearray by 8 MB every 20 ms up to `mb`, then says so and sleeps. */
function grower(mb: number): string {
  return `python3 -c "
import time
chunks = []
for i in range(${mb} // 8):
    chunks.append(bytearray(8 << 20))
    time.sleep(0.02)
print('grown', flush=True)
time.sleep(1000)
"`;
}

describe.each(modeRows())('the memory limit of all jobs (%s)', (mode, skip) => {
  it.skipIf(skip)('stops the job using the most once all pass it; the other seven run on', async () => {
    const runtime = await startRuntime(mode, { allJobsMemoryBytes: 400 * MB, limits: { memoryBytes: 256 * MB } });
    const events: JobEvent[] = [];
    runtime.onJobEvent((event) => events.push(event));
    // One FIFO the seven small jobs share, one for the big one (each open FIFO holds a libuv thread).
    const oracles = [new EofOracle(), new EofOracle()];
    const [smallOracle, bigOracle] = oracles as [EofOracle, EofOracle];
    try {
      const small = [];
      for (let i = 0; i < 7; i++) small.push(await runtime.background({ command: `${smallOracle.prefix}${grower(24)}`, limits: { memoryBytes: 64 * MB } }));
      for (const job of small) await waitForOutput(runtime, job.id, 'grown');
      // Seven jobs of about 40 MB each: under the limit of all. The eighth passes it as it grows,
      // the largest by then.
      const big = await runtime.background({ command: `${bigOracle.prefix}${grower(200)}` });
      expect(await waitFor(runtime, () => runtime.list().find((job) => job.id === big.id)?.cleanedUp === true, 30_000)).toBe(true);
      await bigOracle.waitEof(10_000);
      const report = await runtime.status(big.id);
      expect(report.state).toBe('killed');
      expect(report.limits?.reached).toBe('all-jobs-memory');
      expect(report.text).toMatch(/killed: memory limit of all jobs 400 MB reached \(all jobs \d+ MB, this one \d+ MB, the most\)/);
      expect(events).toContainEqual({ type: 'exited', job: big.id, limitReached: 'all-jobs-memory' });
      // The negative control: the seven smaller jobs, each under its own limit, run on.
      const others = small.map((job) => runtime.list().find((listed) => listed.id === job.id)!);
      expect(others.map((job) => job.state), others.map((job) => job.header).join('\n')).toEqual(Array(7).fill('running'));
      expect(smallOracle.closed).toBe(false);
      const caps = await runtime.capabilities();
      expect(caps.jobLimits.allJobsMemoryBytes).toBe(400 * MB);
      expect(caps.limitations.join('\n')).toContain('The memory limit of all jobs together (400 MB) is held by a watchdog');
    } finally {
      for (const oracle of oracles) oracle.dispose();
    }
  });
});

describe('allJobsMemoryBytes', () => {
  it('is refused below 1 MiB, saying what is accepted', async () => {
    await expect(startRuntime('process-group', { allJobsMemoryBytes: 1000 })).rejects.toThrow(/option allJobsMemoryBytes must be .*1048576/);
  });
});
