/**
 * Output end to end (SPEC 5), through real jobs and the tools' report text: the tail and the
 * earlier-lines line of a job that printed 5000 lines, a 200 MB flood (bounded supervisor memory,
 * bounded rings, no back-pressure), and each rendering rule driven by `printf` in a real job.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createTools, type JobRuntime, type Tools } from '../../src/index.js';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, waitForOutput } from '../helpers/runtime.js';
import { waitFor, toolPort } from '../../src/testing.js';

const MiB = 1024 * 1024;

function toolsFor(runtime: JobRuntime): Tools {
  return createTools(runtime, { approve: async () => 'once' });
}

/** Waits until every process of job `id` is gone and its output drained. */
async function waitCleanedUp(runtime: JobRuntime, id: number, ms = 60_000): Promise<void> {
  const done = await waitFor(runtime, () => runtime.list().find((job) => job.id === id)?.cleanedUp === true, ms);
  if (!done) throw new Error(`job ${id} not finished after ${ms} ms:\n${(await runtime.status(id, { lines: 5 })).text}`);
}

/** The supervisor's resident memory now and at its peak, in bytes (kernel truth: /proc/PID/status). */
function supervisorMemory(pid: number): { rss: number; hwm: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)![1]) * 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

describe.each(modeRows())('output through the tools (%s)', (mode, skip) => {
  it.skipIf(skip)('5000 lines: the last 50 and how many came before; 2000 when asked; the first 3000 are gone', async () => {
    const runtime = await startRuntime(mode);
    const tools = toolsFor(runtime);
    await tools.background.run({ command: 'seq 1 5000' });
    await waitCleanedUp(runtime, 0);

    // Tools that have shown nothing of the job yet (background's answer showed the head to `tools`).
    const reader = toolsFor(runtime);
    const tail = (await reader.job_status.run({ id: 0 })).split('\n');
    expect(tail[0]).toMatch(/^job 0 exited 0 \d+:\d\d seq 1 5000$/);
    // The job's first 20 lines are kept apart from the ring and shown first.
    expect(tail[1]).toBe('(the first 20 lines, kept from the start:)');
    expect(tail.slice(2, 22)).toEqual(Array.from({ length: 20 }, (_, k) => `> ${k + 1}`));
    expect(tail[22]).toBe(
      '(4950 earlier lines: the first 3000 are gone, since only the newest lines are kept; the other 1950 can be shown with job_status {"id": 0, "lines": 2000})',
    );
    expect(tail.slice(23, -1)).toEqual(Array.from({ length: 50 }, (_, k) => `> ${4951 + k}`));
    expect(tail.at(-1)).toBe('job 0 has ended; its output stays readable with job_status {"id": 0}.');

    // lines: N shows the last N and nothing else (no head lines).
    const all = (await reader.job_status.run({ id: 0, lines: 2000 })).split('\n');
    expect(all[1]).toBe("(3000 earlier lines are gone: only the newest lines of a job's output are kept)");
    expect(all.slice(2, -1)).toEqual(Array.from({ length: 2000 }, (_, k) => `> ${3001 + k}`));

    // Asking for more than is kept shows what is kept, and the ring never held more.
    const more = await runtime.status(0, { lines: 1_000_000 });
    expect(more.output!.lines).toHaveLength(2000);
    expect(more.output!.lines[0]!.text).toBe('3001');
    // Reads never consume output: other tools see the same; these tools do not repeat the head.
    expect((await toolsFor(runtime).job_status.run({ id: 0 })).split('\n')).toEqual(tail);
    expect((await reader.job_status.run({ id: 0 })).split('\n')).toEqual([tail[0], ...tail.slice(22)]);
  });

  it.skipIf(skip)('renders progress bars, colours, invalid UTF-8, NUL and control bytes, and an unfinished last line', async () => {
    const runtime = await startRuntime(mode);
    const tools = toolsFor(runtime);
    const command = [
      "printf 'progress 10%%\\rprogress 50%%\\rprogress 100%%\\n'",
      "printf 'dos line\\r\\n'",
      "printf 'trailing cr\\r\\n\\r\\n'",
      "printf '\\033[1;31mred\\033[0m plain \\033]0;title\\007done\\n'",
      "printf 'caf\\303\\251 ok\\n'",
      "printf 'bad \\377\\376 end \\303(\\n'",
      "printf 'nul\\000byte\\n'",
      "printf 'bell\\007 del\\177\\n'",
      "printf 'to stderr\\n' >&2",
      "printf 'Password: '",
      'exec sleep 60',
    ].join('; ');
    await tools.background.run({ command });
    await waitForOutput(runtime, 0, 'Password:');
    const lines = (await tools.job_status.run({ id: 0 })).split('\n');
    expect(lines.slice(1)).toEqual([
      '> progress 100%',
      '> dos line',
      '> trailing cr',
      '> ',
      '> red plain done',
      '> café ok',
      '> bad \\xFF\\xFE end \\xC3(',
      '> nul\\x00byte',
      '> bell\\x07 del\\x7F',
      '! to stderr',
      '> Password: ',
      'job_status {"id": 0} reads more; job_kill {"id": 0} stops it.',
    ]);
  });

  it.skipIf(skip)('a 1 MB line without a newline is cut at the line limit and says how many bytes were cut, before and after it ends', async () => {
    const runtime = await startRuntime(mode);
    const tools = toolsFor(runtime);
    const oracle = new EofOracle();
    try {
      await tools.background.run({ command: `${oracle.prefix} head -c 1048576 /dev/zero | tr '\\0' a; printf 'done\\n' >&2; exec sleep 60` });
      await waitForOutput(runtime, 0, 'done');
      const cutLine = `> ${'a'.repeat(8192)} [line cut: ${1048576 - 8192} more bytes not kept]`;
      // Unfinished: shown as it stands (cut), after the stderr line that completed meanwhile.
      const running = (await tools.job_status.run({ id: 0 })).split('\n');
      expect(running.slice(1)).toEqual(['! done', cutLine, 'job_status {"id": 0} reads more; job_kill {"id": 0} stops it.']);
      // Once the stream ends, the same line is a finished line with the same text and count.
      const killed = (await tools.job_kill.run({ id: 0 })).split('\n');
      expect(killed[0]).toMatch(/^job 0 killed SIGTERM /);
      expect(killed.slice(1, 3).sort()).toEqual(['! done', cutLine].sort());
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });
});

/** Long lines: 2000 lines of 100 kB (200 MB), each cut to the line limit. */
const LONG_FLOOD = `yes "$(head -c 99999 /dev/zero | tr '\\0' x)" | head -c 200000000`;
/** Short lines on both streams at once: 200 MB in 18 million lines of 11 bytes. */
const SHORT_FLOOD = 'yes abcdefghij | head -c 100000000 >&2 & yes abcdefghij | head -c 100000000; wait';
/** What the first 200 MB may raise the supervisor's peak memory by: far below 200 MB. */
const FIRST_FLOOD_BOUND = 128 * MiB;
/** What a second 200 MB may add to that peak: memory that grew with output would add ~200 MB. */
const SECOND_FLOOD_BOUND = 48 * MiB;

/** Runs `command` to its end with nobody reading; its final report (all lines) and the supervisor's peak after it. */
async function flood(runtime: JobRuntime, command: string, supervisorPid: number) {
  const started = await runtime.background({ command });
  // No back-pressure: the job finishes with nobody reading its output (a blocked writer never would).
  await waitCleanedUp(runtime, started.id, 120_000);
  const final = await runtime.status(started.id, { lines: 1_000_000, maxBytes: toolPort(runtime).settings.maxReadBytes });
  return { final, peak: supervisorMemory(supervisorPid).hwm };
}

describe('a cursor past the end of the output (issue 28, item 9)', () => {
  it('says the cursor is past the end, how many lines there are, and offers the last line as cursor', async () => {
    const runtime = await startRuntime('process-group');
    const tools = toolsFor(runtime);
    await tools.background.run({ command: 'seq 1 30' });
    await waitCleanedUp(runtime, 0);

    const plain = (await tools.job_status.run({ id: 0, since: 40 })).split('\n');
    expect(plain[1]).toBe('(since 40 is past the end: job 0 has 30 lines, numbered 0 to 29)');
    expect(plain[2]).toBe('(job_status {"id": 0, "since": 29} reads on)');
    const filtered = (await tools.job_status.run({ id: 0, since: 40, filter: '1' })).split('\n');
    expect(filtered[1]).toBe('(since 40 is past the end: job 0 has 30 lines, numbered 0 to 29)');
    expect(filtered[2]).toBe('(job_status {"id": 0, "since": 29, "filter": "1"} reads on)');
    expect(filtered.join('\n')).not.toContain('no kept line matches');
    const api = await runtime.status(0, { since: 40 });
    expect(api.output?.next).toBe(29);

    // Negative control: a cursor at the last line is not past the end, and reads on from there.
    const atEnd = (await tools.job_status.run({ id: 0, since: 29 })).split('\n');
    expect(atEnd[1]).toBe('(no new output since the last read)');
    expect(atEnd[2]).toBe('(job_status {"id": 0, "since": 29} reads on)');
    const none = (await tools.job_status.run({ id: 0, since: 29, filter: '1' })).split('\n');
    expect(none[1]).toBe('(no kept line matches /1/)');
  });
});

describe('a 200 MB flood', () => {
  // The output path (pipes, reader, ring) is the same in both containment modes: one mode suffices.
  it('keeps the supervisor memory and every ring bounded, and never blocks the job', async () => {
    const runtime = await startRuntime('process-group');
    const { supervisorPid, limits } = await runtime.capabilities();
    const before = supervisorMemory(supervisorPid);
    const long = await flood(runtime, LONG_FLOOD, supervisorPid);
    const short = await flood(runtime, SHORT_FLOOD, supervisorPid);
    for (const [{ final }, lines] of [[long, 2000], [short, 2 * Math.ceil(100_000_000 / 11)]] as const) {
      expect(final.state).toBe('exited');
      expect(final.exitCode).toBe(0);
      const output = final.output!;
      expect(output.totalLines).toBe(lines);
      // The ring holds at most its limits: lines, bytes, bytes per line.
      expect(output.limitedByBytes).toBe(false);
      expect(output.lines.length).toBeLessThanOrEqual(limits.outputLines);
      expect(output.lines.reduce((sum, line) => sum + Buffer.byteLength(line.text), 0)).toBeLessThanOrEqual(limits.outputBytes);
      expect(output.lines.every((line) => Buffer.byteLength(line.text) <= limits.lineBytes)).toBe(true);
    }
    expect(long.final.output!.lines).toHaveLength(limits.outputBytes / limits.lineBytes);
    expect(long.final.output!.lines[0]!.cutBytes).toBe(99999 - limits.lineBytes);
    expect(short.final.output!.lines).toHaveLength(limits.outputLines);
    expect(long.peak - before.rss).toBeLessThan(FIRST_FLOOD_BOUND);
    expect(short.peak - long.peak).toBeLessThan(SECOND_FLOOD_BOUND);
  });

  it('negative control: a ring allowed to keep all 200 MB fails the memory check', async () => {
    const runtime = await startRuntime('process-group', { lineBytes: 1024 * 1024, outputBytes: 1024 * MiB });
    const { supervisorPid } = await runtime.capabilities();
    const before = supervisorMemory(supervisorPid);
    const long = await flood(runtime, LONG_FLOOD, supervisorPid);
    expect(long.final.output!.totalLines).toBe(2000);
    expect(long.peak - before.rss).toBeGreaterThanOrEqual(FIRST_FLOOD_BOUND);
  });
});
