/**
 * Issue 12, item 7: no input may crash the supervisor. A read's text budget of 16 MiB (the frame
 * limit) plus the reply's overhead made the supervisor's encoder throw, uncaught: the supervisor
 * died and every job was lost. Now (a) the runtime accepts a `maxBytes` only up to what keeps every
 * reply below the frame limit (derived from MAX_FRAME_BYTES with a stated margin), and the largest
 * accepted one really fits; (b) the channel answers a reply it cannot encode with an error reply,
 * and the supervisor stays up (spoken to a bare supervisor, which has no such bound).
 *
 * The output: 9 lines of 512 KiB of the byte 0x01, which renders as `\x01` (4 bytes a byte):
 * 18 MiB of text, more than a frame holds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_FRAME_BYTES } from '../../src/protocol/codec.js';
import type { SupervisorConfig } from '../../src/protocol/messages.js';
import { supervisorInstance, toolPort } from '../../src/testing.js';
import { startBareSupervisor, waitForLines } from '../helpers/hardening.js';
import { isRunning } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, tempDir } from '../helpers/runtime.js';

const MiB = 1024 * 1024;
const LINE_BYTES = 512 * 1024 - 1;
const PRINT = `for i in 1 2 3 4 5 6 7 8 9; do head -c ${LINE_BYTES} /dev/zero | tr '\\0' '\\1'; echo; done; echo done; exec sleep 60`;
/** What the ring must be allowed to keep: lines up to 1 MiB, 8 MiB in all. */
const LIMITS = { lineBytes: MiB, outputBytes: 8 * MiB };

const bares: ReturnType<typeof startBareSupervisor>[] = [];
afterEach(async () => {
  await Promise.all(
    bares.splice(0).map(async (bare) => {
      bare.socket.end();
      await bare.exited;
    }),
  );
});

describe.each(modeRows())('replies larger than a frame (%s)', (mode, skip) => {
  it.skipIf(skip)('the runtime refuses a maxBytes whose reply could exceed a frame; the largest it takes fits, and nothing is lost', async () => {
    const runtime = await startRuntime(mode, LIMITS);
    const job = await runtime.background({ command: PRINT });
    await waitForLines(runtime, job.id, (lines) => lines.includes('done'), 'the last line');
    const supervisor = supervisorInstance(runtime);

    const largest = toolPort(runtime).settings.maxReadBytes;
    console.log(`[${mode}] largest maxBytes accepted: ${largest} (frame limit ${MAX_FRAME_BYTES})`);
    expect(largest).toBeLessThan(MAX_FRAME_BYTES);
    await expect(runtime.status(job.id, { lines: 100, maxBytes: MAX_FRAME_BYTES })).rejects.toThrow(
      new RegExp(`option maxBytes must be .* 1 to ${largest}`),
    );
    const read = await runtime.status(job.id, { lines: 100, maxBytes: largest });
    expect(read.state).toBe('running');
    const text = read.output!.lines.reduce((sum, line) => sum + Buffer.byteLength(line.text), 0);
    expect(read.output!.limitedByBytes).toBe(true);
    // Whole lines up to the budget: short of it by less than one more line (2 MiB rendered).
    expect(text).toBeLessThanOrEqual(largest);
    expect(text).toBeGreaterThan(largest - 2 * MiB);
    // The supervisor that answered is the one that runs the job: it did not die on the way.
    expect(supervisorInstance(runtime)).toBe(supervisor);
    expect(isRunning(read.pid!)).toBe(true);
    expect(runtime.list().map((report) => report.state)).toEqual(['running']);
  });

  it.skipIf(skip)('the channel answers a reply it cannot encode with an error reply, and the supervisor stays up', async () => {
    const bare = startBareSupervisor();
    bares.push(bare);
    const config: SupervisorConfig = {
      lockDir: tempDir(),
      containment: mode,
      cgroupParent: null,
      killGraceMs: 500,
      drainMs: 500,
      output: { maxLines: 2000, maxLineBytes: LIMITS.lineBytes, maxBytes: LIMITS.outputBytes, headLines: 20 },
    };
    expect(await bare.request({ type: 'hello', config })).toMatchObject({ ok: true });
    const spawned = await bare.request({ type: 'spawn', params: { job: 0, command: PRINT, cwd: '/', env: [`PATH=${process.env.PATH}`], stdin: false, merge: false, shell: '/bin/sh' } });
    expect(spawned).toMatchObject({ ok: true });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const tail = (await bare.request({ type: 'read', params: { job: 0, tail: 1, maxBytes: 100 } })) as { value: { output: { lines: { text: string }[] } } };
      if (tail.value.output.lines[0]?.text === 'done') break;
      if (Date.now() > deadline) throw new Error(`the job did not print "done": ${JSON.stringify(tail).slice(0, 500)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    const huge = await bare.request({ type: 'read', params: { job: 0, tail: 100, maxBytes: MAX_FRAME_BYTES } }, 30_000);
    expect(huge).toMatchObject({ ok: false, error: { code: 'ERR_PROTOCOL', message: expect.stringMatching(/the reply to read .* exceeds the limit of 16777216 bytes/) } });
    expect(await bare.request({ type: 'ping' })).toMatchObject({ ok: true });
    expect(await bare.request({ type: 'facts', job: 0 })).toMatchObject({ ok: true, value: { exit: null, cleanedUp: false } });
    expect(await bare.request({ type: 'kill', params: { job: 0, signal: 'KILL', graceMs: 0 } })).toMatchObject({ ok: true, value: { facts: { cleanedUp: true } } });
  });
});
