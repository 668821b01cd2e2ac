/**
 * The peer systems' job features against real processes: cursor reads, waiting instead of
 * polling, stdin, signals, timeouts, merged streams, head kept after the ring wraps, restart, and
 * the unknown outcome of a launch whose supervisor died.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { EofOracle, isReaped, see, waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { killSupervisor, settledLostCleanups, waitFor } from '../../src/testing.js';

const texts = (lines: { text: string }[] | undefined) => (lines ?? []).map((line) => line.text);

describe.each(modeRows())('peer features (%s)', (mode, skip) => {
  it.skipIf(skip)('reads 10 000 lines with a cursor and reports what was dropped between reads', async () => {
    const runtime = await startRuntime(mode, { outputLines: 2000 });
    const job = await runtime.background({ command: 'seq 1 10000', waitMs: 30_000 });
    expect(job.state).toBe('exited');
    const first = await runtime.status(job.id, { since: 7999, maxBytes: 65_536 });
    expect(first.output!.dropped).toBe(0);
    expect(texts(first.output!.lines)[0]).toBe('8001');
    const second = await runtime.status(job.id, { since: 100 });
    // Lines 102..8000 (seq numbers 101..7999) fell off a 2000-line ring.
    expect(second.output!.dropped).toBe(7899);
    expect(second.text).toContain('7899 lines since the last read are gone');
    expect(texts(second.output!.lines)[0]).toBe('8001');
    const small = await runtime.status(job.id, { since: 7999, maxBytes: 100 });
    expect(small.output!.limitedByBytes).toBe(true);
    expect(small.text).toContain(`"since": ${small.output!.next}`);
    const rest = await runtime.status(job.id, { since: small.output!.next });
    expect(texts(rest.output!.lines)[0]).toBe(String(Number(texts(small.output!.lines).at(-1)) + 1));
  });

  it.skipIf(skip)('waits for the job to end, for a matching line, or times out, and says which', async () => {
    const runtime = await startRuntime(mode);
    const ends = await runtime.background({ command: 'read x < /dev/null; sleep 0.3; echo bye' });
    const ended = await runtime.status(ends.id, { waitMs: 30_000 });
    expect(ended.state).toBe('exited');
    expect(ended.text).toMatch(/\(after \d+\.\ds the job ended\)/);

    const server = await runtime.background({
      command: 'echo booting; sleep 0.3; echo "listening on :1234"; exec sleep 1000',
      waitMs: 30_000,
      until: 'listening on',
    });
    expect(server.state).toBe('running');
    expect(server.text).toMatch(/a line matched \/listening on\/: "listening on :1234"/);

    const quiet = await runtime.status(server.id, { waitMs: 300, until: 'never printed' });
    expect(quiet.state).toBe('running');
    expect(quiet.text).toMatch(/waited \d+\.\ds: no new line matched \/never printed\/ and the job is still running/);
  });

  it.skipIf(skip)('until with no wait waits for its line (30 s at most): at the start, and in job_status and status, where it was dropped', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    // The line comes a second after the start: past the settle window (0.3 s) a start answers in.
    const started = await tools.background.call({ command: 'sleep 1; echo "ready on 1"; exec sleep 1000', until: 'ready on' });
    expect(started.text).toMatch(/a line matched \/ready on\/: "ready on 1"/);

    // A job that prints each line when a FIFO is written: the read waits before the line is out.
    const fifo = path.join(tempDir(), 'go');
    execFileSync('mkfifo', [fifo]);
    const gated = await runtime.background({ command: `exec 3<>${fifo}; read x <&3; echo "ready on 2"; read x <&3; echo "ready on 3"; exec sleep 1000` });
    const from = (await runtime.status(gated.id)).output!.next;
    const throughTool = tools.job_status.call({ id: gated.id, since: from, until: 'ready on 2' });
    await fs.promises.appendFile(fifo, 'go\n');
    expect((await throughTool).text).toMatch(/a line matched \/ready on 2\/: "ready on 2"/);
    const throughRuntime = runtime.status(gated.id, { since: from + 1, until: 'ready on 3' });
    await fs.promises.appendFile(fifo, 'go\n');
    expect((await throughRuntime).waited).toMatchObject({ kind: 'matched' });
  });

  it.skipIf(skip)('round-trips stdin through cat, and says when a job has no stdin pipe', async () => {
    const runtime = await startRuntime(mode);
    const cat = await runtime.background({ command: 'exec cat', stdin: true });
    await runtime.input(cat.id, { text: 'hello stdin\n' });
    await waitForOutput(runtime, cat.id, 'hello stdin');
    await runtime.input(cat.id, { text: 'last', close: true });
    const done = await runtime.status(cat.id, { waitMs: 30_000 });
    expect(done.state).toBe('exited');
    expect(texts(done.output!.lines)).toEqual(['hello stdin', 'last']);
    const plain = await runtime.background({ command: 'exec sleep 1000' });
    await expect(runtime.input(plain.id, { text: 'x' })).rejects.toThrow(/without a stdin pipe, so its stdin is \/dev\/null/);
  });

  it.skipIf(skip)('sends INT to a job that handles it, and KILLs a TERM ignorer after a custom grace', async () => {
    const runtime = await startRuntime(mode, { killGraceMs: 60_000 });
    const handler = await runtime.background({ command: `exec ${FIXTURES}/handle-int.sh` });
    await waitForOutput(runtime, handler.id, 'ready');
    const interrupted = await runtime.kill(handler.id, { signal: 'INT', graceMs: 30_000 });
    expect(interrupted.state).toBe('exited');
    expect(interrupted.exitCode).toBe(130);
    expect(texts(interrupted.output!.lines)).toContain('got-int');

    const stubborn = await runtime.background({ command: `exec ${FIXTURES}/ignore-term.sh` });
    await waitForOutput(runtime, stubborn.id, 'ready');
    const started = Date.now();
    const killed = await runtime.kill(stubborn.id, { signal: 'TERM', graceMs: 200 });
    expect(killed.signal).toBe('SIGKILL');
    // The runtime's 60 s default grace was not used (a generous bound, not a timing assertion).
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it.skipIf(skip)('stops a job when its timeout runs out, and the report says so', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    try {
      const job = await runtime.background({ command: `${oracle.prefix} exec sleep 1000`, timeoutMs: 300 });
      const report = await runtime.status(job.id, { waitMs: 30_000 });
      await waitFor(runtime, () => runtime.list()[0]!.cleanedUp, 10_000);
      expect(report.state).toBe('killed');
      expect((await runtime.status(job.id)).text).toContain('(stopped by its timeout of 0:00)');
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('merges stdout and stderr into one stream in write order', async () => {
    const runtime = await startRuntime(mode);
    const job = await runtime.background({ command: 'echo 1; echo 2 >&2; echo 3; echo 4 >&2', merge: true, waitMs: 30_000 });
    expect(texts(job.output!.lines)).toEqual(['1', '2', '3', '4']);
    expect(job.output!.lines.every((line) => line.stream === 'stdout')).toBe(true);
    const separate = await runtime.background({ command: 'echo out; echo err >&2', waitMs: 30_000 });
    expect(separate.output!.lines.find((line) => line.text === 'err')?.stream).toBe('stderr');
  });

  it.skipIf(skip)('keeps the first 20 lines after the ring wraps, and shows them apart', async () => {
    const runtime = await startRuntime(mode, { outputLines: 100 });
    const job = await runtime.background({ command: 'echo "fatal: early error"; seq 2 1000', waitMs: 30_000 });
    const report = await runtime.status(job.id, { lines: 10 });
    expect(texts(report.output!.head)[0]).toBe('fatal: early error');
    expect(report.output!.head).toHaveLength(20);
    expect(report.text).toContain('> fatal: early error');
    expect(report.text.indexOf('fatal: early error')).toBeLessThan(report.text.indexOf('> 1000'));
  });

  it.skipIf(skip)('restarts a job: the old one is stopped, the same command runs again as a new job', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    await tools.background.run({ command: 'echo run-$$; exec sleep 1000' });
    await waitForOutput(runtime, 0, 'run-');
    const oldLeader = see(runtime.list()[0]!.pid!);
    const text = await tools.job_restart.run({ id: 0 });
    expect(text.split('\n')[0]).toMatch(/^job 0 killed SIGTERM/);
    expect(text).toMatch(/^job 1 running/m);
    expect(runtime.list()[0]!.cleanedUp).toBe(true);
    expect(isReaped(oldLeader)).toBe(true);
    const fresh = await waitForOutput(runtime, 1, 'run-');
    expect(fresh).toContain(`> run-${runtime.list()[1]!.pid}`);
    expect(runtime.list()[1]!.command).toBe(runtime.list()[0]!.command);
  });
});

describe.each(modeRows())('resources in reports (%s)', (mode, skip) => {
  it.skipIf(skip)('shows the port a real HTTP server listens on, and processes and memory that grow', async () => {
    const runtime = await startRuntime(mode);
    const server = `require('http').createServer(() => {}).listen(0, function () { console.log('port ' + this.address().port) })`;
    const job = await runtime.background({ command: `node -e "${server}"`, waitMs: 30_000, until: '^port ' });
    const port = Number(texts(job.output!.lines).find((line) => line.startsWith('port '))!.slice(5));
    expect(job.stats?.ports).toEqual([port]);
    expect(job.text.split('\n')[0]).toMatch(new RegExp(` · \\d+ procs? · [\\d.]+ [KMG]B · cpu [\\d.]+s · listening :${port}$`));

    // One job that grows when told to: two more processes and 100 MB more memory.
    const alloc = `globalThis.keep = Buffer.alloc(100 * 1024 * 1024, 1); console.log('allocated'); setInterval(() => {}, 1e6)`;
    const big = await runtime.background({
      command: `echo waiting; read go; sleep 1000 & sleep 1000 & exec node -e "${alloc}"`,
      stdin: true,
    });
    await waitForOutput(runtime, big.id, 'waiting');
    const before = (await runtime.status(big.id)).stats!;
    await runtime.input(big.id, { text: 'go\n' });
    const after = (await runtime.status(big.id, { waitMs: 30_000, until: 'allocated' })).stats!;
    expect(after.procs).toBeGreaterThan(before.procs);
    expect(after.memoryBytes!).toBeGreaterThan(before.memoryBytes! + 90 * 1024 * 1024);
    // Finished jobs carry no stats.
    await runtime.kill(big.id);
    expect((await runtime.status(big.id)).stats).toBeNull();
  });
});

describe('unknown outcome', () => {
  it('a launch whose supervisor dies in flight is reported lost, and nothing of it survives', async () => {
    for (const mode of modeRows().filter(([, skip]) => !skip).map(([m]) => m)) {
      const runtime = await startRuntime(mode);
      await runtime.capabilities();
      const pids = tempDir();
      const launch = runtime.background({ command: `echo $$ > ${pids}/leader; exec sleep 1000` });
      killSupervisor(runtime, 'SIGKILL');
      const report = await launch;
      expect(report.state).toBe('lost');
      expect(report.text).toMatch(/whether it ran is unknown|its supervisor died/);
      await settledLostCleanups(runtime);
      const file = path.join(pids, 'leader');
      if (fs.existsSync(file) && fs.readFileSync(file, 'utf8').endsWith('\n')) {
        const pid = Number(fs.readFileSync(file, 'utf8'));
        await waitUntil(() => isReaped({ pid, start: '' }) || !fs.existsSync(`/proc/${pid}`), 'the launched leader gone', 10_000);
      }
    }
  });
});
