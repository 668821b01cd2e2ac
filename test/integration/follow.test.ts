/**
 * `logs` and `logs -f` underneath (src/cli/follow.ts), against a real runtime: the kept output in
 * order with the gap where lines fell out of the ring; following new lines, an unfinished line
 * shown and then finished, at about one round trip per line (the waits are the supervisor's, not
 * a poll); the signal stopping the follow while the job runs on. The job reads its lines from a
 * FIFO the test writes, so each step waits for what it caused. (Display only: one containment
 * mode is enough.)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJobOutput, type OutputSink } from '../../src/cli/follow.js';
import type { JobRuntime } from '../../src/index.js';
import { waitUntil } from '../helpers/kernel.js';
import { startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';

/** A sink that records what it is told, one string per call. */
function recorder() {
  const events: string[] = [];
  const sink: OutputSink = {
    line: (line) => events.push(`${line.stream} ${line.text}`),
    partial: (line) => events.push(line ? `partial ${line.text}` : 'partial gone'),
    gap: (count) => events.push(`gap ${count}`),
  };
  const see = (event: string) => waitUntil(() => events.includes(event), `"${event}" from the follower`, 10_000, () => events);
  return { events, sink, see };
}

/** Job 0 of `runtime`: echoes each line written to the FIFO (`err ...` to stderr; `partial` prints a prompt with no newline). */
async function echoJob(runtime: JobRuntime): Promise<(text: string) => void> {
  const fifo = path.join(tempDir(), 'lines');
  execFileSync('mkfifo', [fifo]);
  await runtime.background({
    command: `exec 3<>${fifo}; while read -r l <&3; do case "$l" in partial) printf 'Password: ';; err*) echo "$l" >&2;; *) echo "$l";; esac; done`,
  });
  // The job holds the FIFO open for reading and writing, so this open never blocks.
  return (text) => fs.writeFileSync(fifo, text);
}

describe('reading a job\'s output as logs does', () => {
  it('follows new lines at about one round trip each; an unfinished line is shown, then finished; the signal stops it, not the job', async () => {
    const runtime = await startRuntime('process-group');
    const write = await echoJob(runtime);
    let reads = 0;
    const counting = { list: () => runtime.list(), status: (id: number, options?: Parameters<JobRuntime['status']>[1]) => (reads++, runtime.status(id, options)) };
    const { events, sink, see } = recorder();
    const stop = new AbortController();
    const following = readJobOutput({ runtime: counting, id: 0, sink, follow: true, signal: stop.signal });

    write('one\n');
    await see('stdout one');
    write('err two\n');
    await see('stderr err two');
    write('partial\n');
    await see('partial Password: ');
    write('three\n');
    await see('stdout Password: three');
    expect(events).toEqual(['stdout one', 'stderr err two', 'partial Password: ', 'partial gone', 'stdout Password: three']);
    // Four things written: a read that returns each, and the one waiting now (a poll would be dozens).
    expect(reads).toBeLessThanOrEqual(2 * 4 + 2);

    stop.abort();
    expect(await following).toBeNull();
    expect(runtime.list()[0]!.state).toBe('running'); // only the follow stopped

    // A follow stopped before it began (Ctrl-C read with the command) shows what is kept, once.
    const early = recorder();
    expect(await readJobOutput({ runtime, id: 0, sink: early.sink, follow: true, signal: AbortSignal.abort() })).toMatchObject({ state: 'running' });
    expect(early.events).toEqual(['stdout one', 'stderr err two', 'stdout Password: three']);

    // Without follow: what is kept, then it returns (the job still runs).
    const kept = recorder();
    const report = await readJobOutput({ runtime, id: 0, sink: kept.sink });
    expect(kept.events).toEqual(['stdout one', 'stderr err two', 'stdout Password: three']);
    expect(report?.state).toBe('running');
  });

  it('negative control: a follower whose reads do not wait is caught by the count of round trips', async () => {
    const runtime = await startRuntime('process-group');
    const write = await echoJob(runtime);
    let reads = 0;
    // The same reads with their waits taken out: each answers at once, as a poll would.
    const polling = {
      list: () => runtime.list(),
      status: (id: number, options: Parameters<JobRuntime['status']>[1] = {}) => {
        reads++;
        const { waitMs: _waitMs, until: _until, ...now } = options;
        return runtime.status(id, now);
      },
    };
    const { sink, see } = recorder();
    const stop = new AbortController();
    const following = readJobOutput({ runtime: polling, id: 0, sink, follow: true, signal: stop.signal });
    write('one\n');
    await see('stdout one');
    // With nothing more written, it goes on asking: past the bound the test above holds for four lines.
    await waitUntil(() => reads > 2 * 4 + 2, 'the polling follower to exceed the bound', 10_000, () => reads);
    stop.abort();
    await following;
  });

  it('following a job to its end: its last, unfinished line is written as a line, and the final report is the answer', async () => {
    const runtime = await startRuntime('process-group');
    await runtime.background({ command: 'echo first; printf last' });
    const { events, sink } = recorder();
    const report = await readJobOutput({ runtime, id: 0, sink, follow: true });
    expect(report).toMatchObject({ state: 'exited', exitCode: 0, cleanedUp: true });
    expect(events.filter((event) => !event.startsWith('partial'))).toEqual(['stdout first', 'stdout last']);
  });

  it('the kept output: the first lines kept from the start, the gap where lines fell out of the ring, then the newest', async () => {
    const runtime = await startRuntime('process-group', { outputLines: 30 });
    await runtime.background({ command: 'i=0; while [ $i -lt 100 ]; do echo "line $i"; i=$((i+1)); done; echo done; exec sleep 60' });
    await waitForOutput(runtime, 0, 'done');
    const { events, sink } = recorder();
    await readJobOutput({ runtime, id: 0, sink });
    const head = Array.from({ length: 20 }, (_, i) => `stdout line ${i}`);
    const tail = Array.from({ length: 29 }, (_, i) => `stdout line ${71 + i}`);
    expect(events).toEqual([...head, 'gap 51', ...tail, 'stdout done']);
  });

  it('a job still waiting for its locks is followed from its first line once it runs', async () => {
    const runtime = await startRuntime('process-group');
    const lease = await runtime.locks.acquire({ label: 'test', kind: 'host' }, ['port:1']);
    const started = runtime.background({ command: 'echo ran', locks: ['port:1'] });
    await waitUntil(() => runtime.list()[0]?.state === 'waiting', 'job 0 to wait for port:1');
    const { events, sink } = recorder();
    const following = readJobOutput({ runtime, id: 0, sink, follow: true });
    lease.release();
    await started;
    expect(await following).toMatchObject({ state: 'exited' });
    expect(events).toEqual(['stdout ran']);
  });
});
