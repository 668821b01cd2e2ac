/**
 * Issue 13, item 2: reads that do not repeat, played as a model through createTools against real
 * jobs. The head lines (the first 20, kept from the start) are shown until these tools have shown
 * them once; `lines: N` shows the last N; `reads: 'new'` shows only lines no earlier answer
 * showed; a `since` read always ends with the call that reads on, and that call works.
 *
 * Input reaches the jobs through the runtime (not job_input), so what the tools have shown is only
 * what the test asked them; the tests wait on the runtime's own reads, never on sleeps.
 */
import { describe, expect, it } from 'vitest';
import { createTools, type ApprovalAnswer, type JobRuntime } from '../../src/index.js';
import { startRuntime, waitForOutput } from '../helpers/runtime.js';
import { waitFor } from '../../src/testing.js';

const approve = async (): Promise<ApprovalAnswer> => 'once';

/** The output lines of an answer (`> ` stdout, `! ` stderr). */
function outputLines(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('> ') || line.startsWith('! '));
}

/** The read-on call an answer ends its output with, parsed as the model would: its JSON input. */
function readOnCall(text: string): { id: number; since: number } | null {
  const match = /job_status (\{"id": \d+, "since": -?\d+\}) reads on/.exec(text);
  return match ? (JSON.parse(match[1]!) as { id: number; since: number }) : null;
}

async function ended(runtime: JobRuntime, id: number): Promise<void> {
  expect(await waitFor(runtime, () => runtime.list().find((job) => job.id === id)?.cleanedUp === true, 20_000)).toBe(true);
}

/** A job that prints `seq 1 N` once it reads a line on stdin (so the tools have seen none of it). */
async function heldJob(runtime: JobRuntime, tools: ReturnType<typeof createTools>, script: string): Promise<number> {
  const result = await tools.background.call({ command: script, stdin: true });
  expect(result.isError, result.text).toBe(false);
  return result.job!.id;
}

describe('reads that do not repeat (issue 13, item 2)', () => {
  it('lines: 3 of a 100-line job shows 3 lines, on the first read and the next', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    const first = await tools.background.run({ command: 'seq 1 100', wait: 20 });
    expect(first.split('\n')[0]).toMatch(/^job 0 exited 0 /);
    for (let read = 0; read < 2; read++) {
      const text = await tools.job_status.run({ id: 0, lines: 3 });
      expect(outputLines(text)).toEqual(['> 98', '> 99', '> 100']);
      expect(text).not.toContain('kept from the start');
    }
  });

  it('the head lines are shown once, by the first default read, and not again', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    const id = await heldJob(runtime, tools, 'read go; seq 1 100');
    await runtime.input(id, { text: '\n' });
    await ended(runtime, id);
    const first = await tools.job_status.run({ id });
    expect(first).toContain('(the first 20 lines, kept from the start:)');
    expect(outputLines(first)).toEqual([...range(1, 20), ...range(51, 100)].map((n) => `> ${n}`));
    const second = await tools.job_status.run({ id });
    expect(second).not.toContain('kept from the start');
    expect(outputLines(second)).toEqual(range(51, 100).map((n) => `> ${n}`));
    // Another set of tools has shown nothing yet: it shows the head once too (negative control).
    const other = await createTools(runtime, { approve }).job_status.run({ id });
    expect(other).toContain('(the first 20 lines, kept from the start:)');
  });

  it("reads: 'new' shows only the lines no earlier answer showed, then says nothing is new", async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve, reads: 'new' });
    const id = await heldJob(runtime, tools, 'read a; seq 1 30; read b; seq 31 100');
    await runtime.input(id, { text: '\n' });
    await waitForOutput(runtime, id, '30');

    const fresh = await tools.job_status.run({ id });
    expect(outputLines(fresh)).toEqual(range(1, 30).map((n) => `> ${n}`));
    const nothing = await tools.job_status.run({ id });
    expect(nothing.split('\n')).toEqual([
      expect.stringMatching(/^job 0 running /),
      '(nothing new: all 30 lines of its output were shown before)',
      'job_status {"id": 0} reads more; job_kill {"id": 0} stops it.',
    ]);

    await runtime.input(id, { text: '\n' });
    await ended(runtime, id);
    // 70 new lines: the newest 50, and the 20 skipped with the call that reads them.
    const later = await tools.job_status.run({ id });
    expect(outputLines(later)).toEqual(range(51, 100).map((n) => `> ${n}`));
    expect(later).toContain('(20 unseen lines skipped; job_status {"id": 0, "since": 29} reads them)');
    const skipped = await tools.job_status.run({ id, since: 29 });
    expect(outputLines(skipped)).toEqual(range(31, 100).map((n) => `> ${n}`));
    expect(await tools.job_status.run({ id })).toContain('(nothing new: all 100 lines of its output were shown before)');

    // lines: N is still the last N, whatever was shown.
    expect(outputLines(await tools.job_status.run({ id, lines: 2 }))).toEqual(['> 99', '> 100']);
  });

  it("reads: 'new' counts background's own answer as shown", async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve, reads: 'new' });
    const started = await tools.background.run({ command: 'seq 1 10', wait: 20 });
    expect(outputLines(started)).toEqual(range(1, 10).map((n) => `> ${n}`));
    await ended(runtime, 0);
    expect(await tools.job_status.run({ id: 0 })).toContain('(nothing new: all 10 lines of its output were shown before)');
    // Negative control: tools in the default mode show the tail again.
    const tail = createTools(runtime, { approve });
    expect(outputLines(await tail.job_status.run({ id: 0 }))).toEqual(range(1, 10).map((n) => `> ${n}`));
  });

  it('a since read always ends with the call that reads on, and that call reads on', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    const id = await heldJob(runtime, tools, 'read a; seq 1 10; read b; seq 11 15');
    await runtime.input(id, { text: '\n' });
    await waitForOutput(runtime, id, '10');

    const all = await tools.job_status.run({ id, since: -1 });
    expect(outputLines(all)).toEqual(range(1, 10).map((n) => `> ${n}`));
    const call = readOnCall(all);
    expect(call).toEqual({ id, since: 9 });

    const none = await tools.job_status.run(call);
    expect(outputLines(none)).toEqual([]);
    expect(none).toContain('(no new output since the last read)');
    expect(readOnCall(none)).toEqual({ id, since: 9 });

    await runtime.input(id, { text: '\n' });
    await ended(runtime, id);
    const more = await tools.job_status.run(call);
    expect(outputLines(more)).toEqual(range(11, 15).map((n) => `> ${n}`));
    expect(readOnCall(more)).toEqual({ id, since: 14 });
  });

  it('createTools refuses a reads mode it does not know, naming both', async () => {
    const runtime = await startRuntime('process-group');
    expect(() => createTools(runtime, { reads: 'all' as 'new' })).toThrow('createTools option reads must be "tail" or "new"; received the string "all"');
  });

  it('lines with since shows the first N lines after since, and reads on after them', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    await tools.background.run({ command: 'seq 1 100', wait: 20 });
    await ended(runtime, 0);
    const page = await tools.job_status.run({ id: 0, since: 9, lines: 5 });
    expect(outputLines(page)).toEqual(range(11, 15).map((n) => `> ${n}`));
    const call = readOnCall(page);
    expect(call).toEqual({ id: 0, since: 14 });
    expect(outputLines(await tools.job_status.run({ ...call, lines: 3 }))).toEqual(['> 16', '> 17', '> 18']);
  });
});

function range(from: number, to: number): string[] {
  return Array.from({ length: to - from + 1 }, (_, k) => String(from + k));
}
