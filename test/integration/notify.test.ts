/**
 * Notify watches through the runtime (issue 26): a line that matches is told as a `notified` job
 * event with its number, however fast the job prints (the ring keeps 2000 lines; the line comes
 * from 10 000); a burst is folded into one event with a count; a port is told once it listens;
 * bad watches are refused with what is accepted. Both containment modes.
 */
import { describe, expect, it } from 'vitest';
import { createTools, type JobEvent, type JobRuntime, type NotifiedFacts } from '../../src/index.js';
import { NOTIFY_FOLD_MS } from '../../src/protocol/notify.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime } from '../helpers/runtime.js';
import { accepts, freePort } from '../helpers/net.js';
import { waitUntil } from '../helpers/kernel.js';

/** 10 000 lines as fast as awk writes them, `FAIL src/a.test.ts` as line 4321 (counting from 0). */
const WATCHER = `seq 0 9999 | awk '{ if ($1 == 4321) print "FAIL src/a.test.ts"; else print "ok " $1 }'`;

function notifiedOf(runtime: JobRuntime): NotifiedFacts[][] {
  const byJob: NotifiedFacts[][] = [];
  runtime.onJobEvent((event: JobEvent) => {
    if (event.type === 'notified') (byJob[event.job] ??= []).push(event.notified!);
  });
  return byJob;
}

describe.each(modeRows())('notify (%s)', (mode, skip) => {
  it.skipIf(skip)('tells the one FAIL among 10 000 lines, with its number; a pattern that never matches tells nothing', async () => {
    const runtime = await startRuntime(mode);
    const told = notifiedOf(runtime);
    const job = await runtime.background({ command: WATCHER, notify: [{ pattern: 'FAIL' }, { pattern: 'NEVER' }] });
    // The wait for the end answers once the last output is read, after every watch has told all.
    const ended = await runtime.status(job.id, { waitMs: 30_000, lines: 1 });
    expect(ended.state).toBe('exited');
    expect(ended.output!.totalLines).toBe(10_000);
    expect(told[job.id]).toEqual([{ pattern: 'FAIL', line: 'FAIL src/a.test.ts', lineNumber: 4321, count: 1, everyLine: false }]);
    // Negative control: the ring kept only the last 2000 lines, so a read can no longer find it.
    expect((await runtime.status(job.id, { filter: 'FAIL' })).output!.matched).toBe(0);
  });

  it.skipIf(skip)('folds a pattern that matches every line into few events whose counts add up to every line', async () => {
    const runtime = await startRuntime(mode);
    const told = notifiedOf(runtime);
    const started = Date.now();
    const job = await runtime.background({ command: WATCHER, notify: { pattern: '.' } });
    await runtime.status(job.id, { waitMs: 30_000 });
    const events = told[job.id]!;
    expect(events.reduce((sum, event) => sum + event.count, 0)).toBe(10_000);
    expect(events[0]).toMatchObject({ line: 'ok 0', lineNumber: 0 });
    // One event at once, then at most one per fold window for as long as it printed.
    expect(events.length).toBeLessThanOrEqual(2 + Math.ceil((Date.now() - started) / NOTIFY_FOLD_MS));
    expect(events.slice(1).every((event) => event.everyLine || event.count === 1)).toBe(true);
    expect(events.some((event) => event.everyLine)).toBe(true);
  });

  it.skipIf(skip)('tells once when the job listens on the port, and a watch added later sees only later lines', async () => {
    const runtime = await startRuntime(mode);
    const told = notifiedOf(runtime);
    const port = await freePort();
    expect(await accepts(port)).toBe(false); // negative control: nothing listens yet
    const listen = `import socket, sys, time\ns = socket.socket(); s.bind(("127.0.0.1", ${port})); s.listen()\nprint("FAIL before", flush=True)\nsys.stdin.readline()\nprint("FAIL after", flush=True)\ntime.sleep(60)`;
    const job = await runtime.background({ command: `python3 -c '${listen}'`, stdin: true, notify: { port } });
    await waitUntil(() => (told[job.id] ?? []).length > 0, 'the port notice');
    expect(await accepts(port)).toBe(true);
    expect(told[job.id]).toEqual([{ port, count: 1, everyLine: false }]);
    await runtime.status(job.id, { waitMs: 30_000, until: 'before', since: -1 });
    await runtime.notify(job.id, { pattern: 'FAIL' });
    await runtime.input(job.id, { text: 'go\n' });
    await waitUntil(() => told[job.id]!.length > 1, 'the line notice');
    expect(told[job.id]![1]).toEqual({ pattern: 'FAIL', line: 'FAIL after', lineNumber: 1, count: 1, everyLine: false });
    await runtime.kill(job.id);
    expect(told[job.id]).toHaveLength(2);
  });
});

describe('notify input', () => {
  it('refuses a watch it cannot keep, saying what is accepted', async () => {
    const runtime = await startRuntime('process-group');
    await expect(runtime.background({ command: 'true', notify: {} })).rejects.toThrow('notify has neither a pattern nor a port; give one or both, e.g. {"pattern": "FAIL"}');
    await expect(runtime.background({ command: 'true', notify: [{ port: 0 }] })).rejects.toThrow('notify[0].port must be a TCP port, a whole number from 1 to 65535; received 0');
    await expect(runtime.background({ command: 'true', notify: { pattern: '(a)\\1' } })).rejects.toThrow(/notify.pattern/);
    const nine = Array.from({ length: 9 }, (_, i) => ({ pattern: `p${i}` }));
    await expect(runtime.background({ command: 'true', notify: nine })).rejects.toThrow('notify asks for 9 watches; a job may have at most 8');
    const done = await runtime.background({ command: 'true', waitMs: 30_000 });
    await expect(runtime.notify(done.id, { pattern: 'x' })).rejects.toThrow(`job ${done.id} is not running (exited); there is nothing left to watch`);
    // Nothing was started by the refused calls.
    expect(runtime.list().map((job) => job.id)).toEqual([done.id]);
  });
});

describe.each(modeRows())('notify through the tools (%s)', (mode, skip) => {
  it.skipIf(skip)('tells the model a matching line once, on its next answer, and refuses a watch it cannot keep', async () => {
    const runtime = await startRuntime(mode);
    const told = notifiedOf(runtime);
    const tools = createTools(runtime, { approve: async () => 'once' });
    // One write per line: the answer's wait may otherwise catch a line before its newline.
    const script = 'import os, sys\nos.write(1, b"FAIL before\\n")\nsys.stdin.readline()\nos.write(1, b"FAIL after\\n")\nsys.stdin.readline()';
    const started = await tools.background.call({ command: `python3 -c '${script}'`, stdin: true, notify: 'FAIL', until: 'before', wait: 30 });
    if (!started.job) throw new Error(started.text);
    const id = started.job.id;
    expect(started.job.output!.lines.map((line) => line.text)).toEqual(['FAIL before']);
    // The line the answer showed is not told again.
    await waitUntil(() => (told[id] ?? []).length === 1, 'the first line event');
    const quiet = await tools.job_status.call({});
    expect(quiet.notices, JSON.stringify([quiet.notices, started.job!.output])).toBeUndefined();
    // A line no answer showed, written by the host: told on the model's next answer, once.
    await runtime.input(id, { text: 'go\n' });
    await waitUntil(() => told[id]!.length === 2, 'the second line event');
    const next = await tools.job_status.call({});
    expect(next.notices?.map((notice) => notice.text)).toEqual([`(${runtime.list()[0]!.header}: line 1 matches "FAIL": FAIL after)`]);
    expect(next.text.endsWith('line 1 matches "FAIL": FAIL after)')).toBe(true);
    expect((await tools.job_status.call({})).notices).toBeUndefined();

    const badPort = await tools.job_status.call({ id, notify: 'port:70000' });
    expect(badPort).toMatchObject({ isError: true });
    expect(badPort.text).toContain('notify "port:70000" names no TCP port; "port:N" takes N from 1 to 65535');
    const noId = await tools.job_status.call({ notify: 'FAIL' });
    expect(noId.isError).toBe(true);
    await tools.job_kill.call({ id });
  });
});
