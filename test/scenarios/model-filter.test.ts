/**
 * Issue 13, item 3: finds the error in the middle. A model reads a failing 300-line build through
 * createTools with `filter` and gets the matching kept lines, each with its number (the number
 * `since` takes: the first line is 0), the newest 50 (or `lines`), and how many match in all.
 * Real jobs; every wait is on the runtime or the job's end, never a sleep.
 */
import { describe, expect, it } from 'vitest';
import { createTools, type ApprovalAnswer, type JobRuntime } from '../../src/index.js';
import { startRuntime } from '../helpers/runtime.js';
import { waitFor } from '../../src/testing.js';

const approve = async (): Promise<ApprovalAnswer> => 'once';

const ERROR = "src/a.ts(3,1): error TS2304: Cannot find name 'x'.";

/** A build that prints 300 lines, the 150th (line 149 as since counts) an error on stderr, and exits 1. */
function failingBuild(errorAt = 150, lines = 300): string {
  const script =
    `for (let n = 1; n <= ${lines}; n++) { if (n === ${errorAt}) process.stderr.write(${JSON.stringify(ERROR)} + '\\n'); ` +
    `else process.stdout.write('compiling module ' + n + '...\\n'); } process.exitCode = 1;`;
  return `node -e ${JSON.stringify(script)}`;
}

function outputLines(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('> ') || line.startsWith('! '));
}

async function ended(runtime: JobRuntime, id: number): Promise<void> {
  expect(await waitFor(runtime, () => runtime.list().find((job) => job.id === id)?.cleanedUp === true, 30_000)).toBe(true);
}

/** The seq of the line containing `text`, from a full read of the runtime (the oracle for the number shown). */
async function seqOf(runtime: JobRuntime, id: number, text: string): Promise<number> {
  const all = await runtime.status(id, { since: -1 });
  const found = all.output!.lines.filter((line) => line.text.includes(text));
  expect(found).toHaveLength(1);
  return found[0]!.seq;
}

describe('filter: the error in the middle (issue 13, item 3)', () => {
  it('a failing 300-line build: the error line, on stderr, with its number and the count', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    const started = await tools.background.call({ command: failingBuild(), wait: 30 });
    expect(started.text.split('\n')[0]).toMatch(/^job 0 exited 1 /);
    await ended(runtime, 0);
    // The two pipes are read apart, so the line's number is taken from a full read, not assumed.
    const seq = await seqOf(runtime, 0, 'error TS2304');

    const text = await tools.job_status.run({ id: 0, filter: 'error|warn' });
    expect(text.split('\n')).toEqual([
      expect.stringMatching(/^job 0 exited 1 /),
      '(1 line matches /error|warn/, numbered as since counts)',
      `! ${seq}: ${ERROR}`,
      'job 0 has ended; its output stays readable with job_status {"id": 0}.',
    ]);
    // The number is the one since takes: the line after `since: seq - 1` is that line.
    expect(outputLines(await tools.job_status.run({ id: 0, since: seq - 1, lines: 1 }))).toEqual([`! ${ERROR}`]);
  });

  it('merged into one stream the error is exactly the 150th line, number 149', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    const started = await tools.background.call({ command: failingBuild(), merge: true, wait: 30 });
    // The default read does not reach it (negative control): the tail is lines 251-300.
    expect(outputLines(started.text).join('\n')).not.toContain('error TS2304');
    await ended(runtime, 0);
    expect(outputLines(await tools.job_status.run({ id: 0, filter: 'TS2304' }))).toEqual([`> 149: ${ERROR}`]);
  });

  it('many matches: the newest 50 (or lines), the count of all, and the call that shows all', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    await tools.background.call({ command: failingBuild(), merge: true, wait: 30 });
    await ended(runtime, 0);
    const text = await tools.job_status.run({ id: 0, filter: 'compiling' });
    expect(text).toContain('(299 lines match /compiling/, numbered as since counts; the newest 50 shown; job_status {"id": 0, "filter": "compiling", "lines": 299} shows all)');
    const shown = outputLines(text);
    expect(shown).toHaveLength(50);
    expect(shown[0]).toBe('> 250: compiling module 251...');
    expect(shown.at(-1)).toBe('> 299: compiling module 300...');
    const call = JSON.parse(/job_status (\{"id": 0, "filter": "compiling", "lines": 299\}) shows all/.exec(text)![1]!);
    expect(outputLines(await tools.job_status.run(call))).toHaveLength(299);
    expect(outputLines(await tools.job_status.run({ id: 0, filter: 'compiling', lines: 2 }))).toEqual([
      '> 298: compiling module 299...',
      '> 299: compiling module 300...',
    ]);
  });

  it('filter with since: the first matches after since, and the call that reads on keeps the filter', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    await tools.background.call({ command: failingBuild(), merge: true, wait: 30 });
    await ended(runtime, 0);
    // Modules 10, 20, ... 300 match (150 is the error line); after line 100 come 110 (line 109) and 120.
    const filter = 'module \\d*0\\.';
    const page = await tools.job_status.run({ id: 0, filter, since: 100, lines: 2 });
    expect(page).toContain('(19 lines match /module \\d*0\\./, numbered as since counts; the first 2 shown)');
    expect(outputLines(page)).toEqual(['> 109: compiling module 110...', '> 119: compiling module 120...']);
    const readOn = /job_status (\{"id": 0, "since": \d+, "filter": "[^"]*"\}) reads on/.exec(page);
    const call = JSON.parse(readOn![1]!);
    expect(call).toEqual({ id: 0, since: 119, filter });
    expect(outputLines(await tools.job_status.run({ ...call, lines: 3 }))).toEqual([
      '> 129: compiling module 130...',
      '> 139: compiling module 140...',
      '> 159: compiling module 160...',
    ]);
    // The last page reads on after the last line, where only new matches can come.
    const rest = await tools.job_status.run({ id: 0, filter, since: 250 });
    expect(outputLines(rest)).toHaveLength(5);
    expect(rest).toContain(`(job_status {"id": 0, "since": 299, "filter": ${JSON.stringify(filter)}} reads on)`);
  });

  it('the head lines are searched after the ring wrapped; lines no longer kept are said not searched', async () => {
    const runtime = await startRuntime('process-group', { outputLines: 100 });
    const tools = createTools(runtime, { approve });
    await tools.background.call({ command: `${failingBuild(10)}; echo "warn: late" >&2`, merge: true, wait: 30 });
    await ended(runtime, 0);
    const text = await tools.job_status.run({ id: 0, filter: 'error|warn' });
    expect(outputLines(text)).toEqual([`> 9: ${ERROR}`, '> 300: warn: late']);
    expect(text).toContain('(2 lines match /error|warn/, numbered as since counts; 181 earlier lines are no longer kept and were not searched)');
  });

  it('filter with wait: the read after the job ended is filtered', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    const started = await tools.background.call({ command: `read go; ${failingBuild()}`, stdin: true, merge: true });
    expect(started.text).toContain('(no output yet)');
    const answer = tools.job_status.run({ id: 0, wait: 30, filter: 'TS2304' });
    await runtime.input(0, { text: '\n' });
    const text = await answer;
    expect(text.split('\n')[0]).toMatch(/^job 0 exited 1 /);
    expect(outputLines(text)).toEqual([`> 149: ${ERROR}`]);
  });

  it('a bad filter is refused with the field named, and nothing is read', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime, { approve });
    await tools.background.call({ command: 'echo hi', wait: 10 });
    const cases: [unknown, RegExp][] = [
      ['(?=x)', /^job_status: bad input: filter uses a lookahead \(\?=, which RE2 cannot run: patterns are matched by RE2/],
      ['(', /^job_status: bad input: filter is not a regular expression RE2 can compile \(missing closing \)/],
      ['', /^job_status: bad input: filter must be a regular expression of 1 to 1000 characters; received ""\./],
    ];
    for (const [filter, reason] of cases) {
      const result = await tools.job_status.call({ id: 0, filter });
      expect(result.isError).toBe(true);
      expect(result.text).toMatch(reason);
      expect(result.job).toBeUndefined();
    }
    // Without an id there is no job to filter.
    expect((await tools.job_status.call({ filter: 'x' })).isError).toBe(true);
    // The runtime API refuses it too, naming the field.
    await expect(runtime.status(0, { filter: '(?<=a)b' })).rejects.toThrow(/^filter uses a lookbehind/);
  });
});
