/**
 * Issue 28, item 8: job_input to a job that does not read answers within a bound, saying how many
 * bytes went in and that the job is not reading; the rest is not sent (and said so), so nothing
 * waits in the supervisor. Kernel truth for the count: the job, once let read, writes what it got
 * to a file whose size must be the count the answer gave.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { within } from '../helpers/hardening.js';
import { waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, tempDir } from '../helpers/runtime.js';

const BIG = 256 * 1024;

describe.each(modeRows())('job_input to a job that does not read (%s)', (mode, skip) => {
  it.skipIf(skip)('a stdin pipe: answers, says how many bytes went in, and that count is what the job gets', async () => {
    const runtime = await startRuntime(mode);
    const dir = tempDir();
    const go = path.join(dir, 'go');
    const out = path.join(dir, 'out');
    // Reads nothing until `go` exists, then everything to `out`.
    const job = await runtime.background({ command: `while [ ! -e ${go} ]; do sleep 0.05; done; exec cat > ${out}`, stdin: true });
    const report = await within(runtime.input(job.id, { text: 'x'.repeat(BIG) }), 20_000, 'job_input to answer');
    expect(report.input).toMatchObject({ bytes: BIG, stalled: true });
    const written = report.input!.written;
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(BIG);
    expect(report.text).toContain(`(job ${job.id} is not reading its input: ${written} of ${BIG} bytes went in within`);
    expect(report.text).toContain(`the other ${BIG - written} were not sent`);

    fs.writeFileSync(go, '');
    const closed = await within(runtime.input(job.id, { close: true }), 20_000, 'the close to answer');
    expect(closed.input?.stalled ?? false).toBe(false);
    const ended = await runtime.status(job.id, { waitMs: 20_000 });
    expect(ended.state).toBe('exited');
    await waitUntil(() => fs.existsSync(out) && fs.statSync(out).size === written, `${out} to hold ${written} bytes`, 10_000, () => fs.statSync(out).size);
  });

  it.skipIf(skip)('a terminal: answers, and says how many bytes went in', async () => {
    const runtime = await startRuntime(mode);
    const job = await runtime.background({ command: 'exec sleep 1000', tty: true });
    const text = `${'y'.repeat(1000)}\n`.repeat(64);
    const report = await within(runtime.input(job.id, { text }), 20_000, 'job_input to answer');
    expect(report.input).toMatchObject({ bytes: text.length, stalled: true });
    expect(report.input!.written).toBeLessThan(text.length);
    expect(report.text).toContain(`is not reading its input: ${report.input!.written} of ${text.length} bytes went in`);
    // Through the tool, the same sentence ends the call's answer.
    const tools = createTools(runtime, { approve: async () => 'once' });
    const answer = await within(tools.job_input.run({ id: job.id, text: 'z'.repeat(4096) }), 20_000, 'the tool to answer');
    expect(answer).toMatch(/is not reading its input: \d+ of 4096 bytes went in/);
  });

  it.skipIf(skip)('negative control: a job that reads takes all of it, and nothing is said', async () => {
    const runtime = await startRuntime(mode);
    const job = await runtime.background({ command: 'exec cat > /dev/null', stdin: true });
    const report = await within(runtime.input(job.id, { text: 'x'.repeat(BIG) }), 20_000, 'job_input to answer');
    expect(report.input).toMatchObject({ bytes: BIG, written: BIG, stalled: false });
    expect(report.text).not.toContain('not reading');
  });
});
