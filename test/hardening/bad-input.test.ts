/**
 * Scenario 10 of the hardening issue: bad input everywhere.
 *
 * - The channel: a supervisor started by hand on a socket the test holds is fed a seeded fuzz loop
 *   of random bytes, truncated msgpack frames, oversized length headers (with their whole body, so
 *   the stream stays in step) and decodable requests with wrong types. Each gets exactly one error
 *   (an error reply, or a protocol-error event for a frame without an id); a ping still answers and
 *   a running job is undisturbed (its output keeps growing, it still runs).
 * - The tools: wrong types, huge numbers, negative ids, unknown fields, 1 MB commands, NUL bytes, bad
 *   lock strings, a cwd that is a file, env with invalid entries. Each call returns a clear
 *   sentence, never throws, and spawns nothing (no new job record, no job event).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeFrame, MAX_FRAME_BYTES } from '../../src/protocol/codec.js';
import { createTools, HephError, type JobEvent } from '../../src/index.js';
import { EofOracle, isRunning } from '../helpers/kernel.js';
import { bareConfig, prng, startBareSupervisor, summary } from '../helpers/hardening.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';

const SEED = Number(process.env.HEPH_FUZZ_SEED ?? Date.now() % 2 ** 31);
const FUZZ_FRAMES = 400;

type Message = { id?: number; ok?: boolean; event?: string; value?: unknown; error?: { code?: string; message?: string }; message?: string };

/** Requests the supervisor knows, with fields of the wrong type, aimed at jobs that do not exist or
 * at nothing: each must be answered with an error and change nothing. */
function confusedRequests(): Record<string, unknown>[] {
  return [
    { type: 'spawn', params: null },
    { type: 'spawn', params: { job: 'x', command: 5, cwd: {}, env: 'A=B', stdin: 'yes', merge: 1, shell: [] } },
    { type: 'spawn', params: { job: 1, command: 'true', cwd: '/', env: [5, null], stdin: false, merge: false, shell: '/bin/sh' } },
    { type: 'spawn', params: { job: 1, command: 'true', cwd: '/', env: [], envBase: 99, envUnset: ['=x'], stdin: false, merge: false, shell: '/bin/sh' } },
    { type: 'environment', version: 0, entries: ['NOEQUALS', 5] },
    { type: 'kill', params: { job: 'x', signal: 'HUP', graceMs: -1 } },
    { type: 'kill', params: { job: 9999, signal: 'TERM', graceMs: 0 } },
    { type: 'kill' },
    { type: 'read', params: { job: 9999 } },
    { type: 'read', params: null },
    { type: 'read' },
    { type: 'facts', job: -1 },
    { type: 'facts', job: '0' },
    { type: 'forget', job: 9999 },
    { type: 'write', job: 9999, data: 'text', close: 'yes' },
    { type: 'subscribe', job: 9999, on: true },
    { type: 'lock', lease: 'x', resources: 'port:1', owner: null },
    { type: 'lock', lease: 1, resources: [{ resource: 5 }], owner: { label: 5, job: 'x' } },
    { type: 'unlock', lease: {} },
    { type: 'hello', config: {} },
    { type: 'no-such-request' },
    { type: '' },
  ];
}

/** Confused requests aimed at the running job 0: each must be refused and leave the job running. */
function confusedAtJob0(): Record<string, unknown>[] {
  return [
    { type: 'kill', params: { job: 0, signal: 'HUP', graceMs: 0 } },
    { type: 'kill', params: { job: 0, signal: 'TERM', graceMs: -5 } },
    { type: 'kill', params: { job: 0, signal: null, graceMs: 'soon' } },
    { type: 'kill', params: { job: 0, signal: 'KILL', graceMs: 0, read: { tail: -1, maxBytes: 0 } } },
    { type: 'kill', params: { job: 0, signal: 'KILL', graceMs: 0, read: 'tail' } },
    { type: 'read', params: { job: 0, tail: -5, since: 'a', maxBytes: 1e300 } },
    { type: 'read', params: { job: 0, tail: 'all' } },
    { type: 'forget', job: 0 },
    { type: 'write', job: 0, data: 'text', close: true },
    { type: 'subscribe', job: 0, on: 'maybe' },
  ];
}

const config = bareConfig;

function frameWithBody(body: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length);
  return Buffer.concat([header, body]);
}

describe.each(modeRows())('bad input everywhere (%s)', (mode, skip) => {
  it.skipIf(skip)(`the channel answers a fuzz loop of ${FUZZ_FRAMES} bad frames with errors, and stays up`, async () => {
    console.log(`[${mode}] channel fuzz seed ${SEED} (replay with HEPH_FUZZ_SEED=${SEED})`);
    const random = prng(SEED);
    const int = (n: number) => Math.floor(random() * n);
    const bare = startBareSupervisor();
    const oracle = new EofOracle();
    const failures: string[] = [];
    let frames = 0;
    try {
      const hello = await bare.request({ type: 'hello', config: config(mode, tempDir()) });
      expect(hello).toMatchObject({ ok: true });
      const spawned = await bare.request({
        type: 'spawn',
        params: { job: 0, command: `${oracle.prefix} exec ${FIXTURES}/ticker.sh`, cwd: '/', env: [`PATH=${process.env.PATH}`], stdin: false, merge: false, shell: '/bin/sh' },
      });
      expect(spawned).toMatchObject({ ok: true });
      const pid = (spawned.value as { pid: number }).pid;
      const lines = async () => ((await bare.request({ type: 'read', params: { job: 0, tail: 1 } })).value as { output: { totalLines: number } }).output.totalLines;
      // The job's output before the fuzz (bounded wait for its first lines).
      const started = Date.now();
      let before = await lines();
      while (before < 3 && Date.now() - started < 10_000) before = await lines();

      const valid = [
        encodeFrame({ id: 7, type: 'ping' }),
        encodeFrame({ id: 8, type: 'read', params: { job: 0, tail: 5 } }),
        encodeFrame({ id: 9, type: 'facts', job: 0 }),
      ];
      const errorsSoFar = () => bare.inbox.filter((message) => (message as Message).event === 'protocol-error' || (message as Message).ok === false).length;
      for (let i = 0; i < FUZZ_FRAMES; i++) {
        const kind = i % 5;
        let frame: Buffer;
        let what: string;
        if (kind === 0 || kind === 1) {
          // Random bytes drawn from the seed, so a failure replays.
          frame = frameWithBody(Buffer.from(Array.from({ length: int(200) }, () => int(256))));
          what = 'random bytes';
        } else if (kind === 2) {
          const whole = valid[int(valid.length)]!;
          frame = frameWithBody(whole.subarray(4, 4 + int(whole.length - 5)));
          what = 'a truncated frame';
        } else if (kind === 3) {
          if (i % 50 === 3) {
            // Over the limit: the header, then the whole body, skipped as it arrives.
            const length = MAX_FRAME_BYTES + 1 + int(1000);
            const header = Buffer.alloc(4);
            header.writeUInt32BE(length);
            frame = Buffer.concat([header, Buffer.alloc(length, int(256))]);
            what = `an oversized frame of ${length} bytes`;
          } else {
            frame = frameWithBody(Buffer.from([0xc1, ...Array.from({ length: int(20) }, () => int(256))]));
            what = 'a never-used msgpack byte';
          }
        } else {
          const request = confusedRequests()[int(confusedRequests().length)]!;
          const id = 500_000 + i;
          bare.socket.write(encodeFrame({ ...request, id }));
          frames++;
          const reply = (await bare.next((message) => (message as Message).id === id)) as Message;
          if (reply.ok !== false || typeof reply.error?.message !== 'string' || reply.error.message.length === 0) {
            failures.push(`confused request ${JSON.stringify(request)} was answered ${JSON.stringify(reply)}`);
          }
          continue;
        }
        const errorsBefore = errorsSoFar();
        bare.socket.write(frame);
        frames++;
        // A ping behind it: its reply comes after the bad frame's error (frames are handled in order).
        const ping = await bare.request({ type: 'ping' });
        if (!ping.ok) failures.push(`ping after ${what} failed: ${JSON.stringify(ping)}`);
        const errors = errorsSoFar() - errorsBefore;
        if (errors !== 1) failures.push(`${what} (${frame.subarray(0, 24).toString('hex')}) got ${errors} errors, not 1`);
        // Keep the inbox to what is still unread: the errors were counted.
        bare.inbox.splice(0, bare.inbox.length, ...bare.inbox.filter((message) => (message as Message).event === 'output'));
      }
      for (const request of confusedAtJob0()) {
        frames++;
        const reply = (await bare.request(request)) as Message;
        if (reply.ok !== false) failures.push(`${JSON.stringify(request)} aimed at the running job was accepted: ${JSON.stringify(reply).slice(0, 300)}`);
      }

      const ping = await bare.request({ type: 'ping' });
      if (!ping.ok) failures.push('the final ping failed');
      const factsReply = await bare.request({ type: 'facts', job: 0 });
      const facts = factsReply.value as { exit: unknown; cleanedUp: boolean } | undefined;
      if (!factsReply.ok || facts?.exit !== null || facts.cleanedUp || !isRunning(pid)) {
        failures.push(`the running job was disturbed: ${JSON.stringify(factsReply)}`);
        summary(10, frames, failures.length, `${mode}, channel`);
        expect(failures).toEqual([]);
      }
      // Its output grew during the fuzz, and keeps growing (bounded wait).
      const during = await lines();
      if (during <= before) failures.push(`the running job's output did not grow during the fuzz (${before} lines before, ${during} after)`);
      const deadline = Date.now() + 10_000;
      let after = await lines();
      while (after <= during + 10 && Date.now() < deadline) after = await lines();
      if (after <= during + 10) failures.push(`the running job's output stopped growing (${during} lines after the fuzz, ${after} later)`);
      console.log(`[${mode}] channel: ${frames} bad frames; the job's output grew from ${before} to ${during} lines during the fuzz, then to ${after}`);
    } finally {
      bare.socket.end();
      await bare.exited;
      // The supervisor stops its jobs when the channel closes.
      const gone = await oracle.eofWithin(10_000);
      oracle.dispose();
      if (!gone) failures.push('the job outlived its supervisor');
    }
    summary(10, frames, failures.length, `${mode}, channel`);
    expect(failures).toEqual([]);
  });

  it.skipIf(skip)('the tools answer bad input with a sentence, never throw, and spawn nothing', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: async () => 'once' });
    const oracle = new EofOracle();
    const dir = tempDir();
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, 'not a directory\n');
    const failures: string[] = [];
    const answers: string[] = [];
    const events: JobEvent[] = [];
    runtime.onJobEvent((event) => events.push(event));
    try {
      const running = await runtime.background({ command: `${oracle.prefix} exec ${FIXTURES}/ticker.sh` });
      await waitForOutput(runtime, running.id, 'tick 1');
      const jobsBefore = runtime.list().length;
      const eventsBefore = events.length;
      const id = running.id;
      const huge = 'x'.repeat(1024 * 1024);
      const calls: [string, () => Promise<string>][] = [];
      const call = (name: string, run: () => Promise<string>) => calls.push([name, run]);
      for (const input of [
        undefined, null, 42, 'npm run dev', [], {}, { command: 5 }, { command: '' }, { command: '   ' }, { command: huge },
        { command: 'echo a\0b' }, { command: 'true', foo: 1 }, { command: 'true', timeout: -1 }, { command: 'true', timeout: 1e308 },
        { command: 'true', wait: Number.POSITIVE_INFINITY }, { command: 'true', wait: Number.NaN }, { command: 'true', stdin: 'yes' },
        { command: 'true', until: '(' }, { command: 'true', locks: 'port:1' }, { command: 'true', locks: [5] },
        { command: 'true', locks: ['nocolon'] }, { command: 'true', locks: ['port:'] }, { command: 'true', locks: [':x'] },
        { command: 'true', locks: ['port:1\0'] }, { command: 'true', locks: [`path:${huge}`] }, { command: 'true', locks: Array(1000).fill('port:1') },
        { command: 'true', locks: ['path:relative/dir'] }, { command: ['true'] },
      ]) {
        call(`background ${JSON.stringify(input)?.slice(0, 60)}`, () => tools.background.run(input));
      }
      for (const input of [
        { id: -1 }, { id: 1.5 }, { id: '0.5' }, { id: 1e300 }, { id: Number.MAX_SAFE_INTEGER + 2 }, { id: Number.NaN }, { id: 123456 },
        { id, lines: -1 }, { id, lines: 1e12 }, { id, since: -5 }, { id, max_bytes: 0 }, { id, wait: -1 }, { id, wait: 1e9 },
        { id, until: '[' }, { lines: 5 }, { id, extra: true }, 'x', [], 7,
      ]) {
        call(`job_status ${JSON.stringify(input)}`, () => tools.job_status.run(input));
      }
      for (const input of [{ id: -1 }, { id: 'zero' }, { id: 1e300 }, {}, null, { id, signal: 'HUP' }, { id, grace: -1 }, { id, grace: 1e12 }, { id, extra: 1 }, { id: 123456 }]) {
        call(`job_kill ${JSON.stringify(input)}`, () => tools.job_kill.run(input));
      }
      for (const input of [{ id, text: 'x'.repeat(2 * 1024 * 1024) }, { id, text: 5 }, { id, close: 'yes' }, { id: -1, text: 'x' }]) {
        call(`job_input ${JSON.stringify(input).slice(0, 60)}`, () => tools.job_input.run(input));
      }
      for (const input of [{ id: 'a' }, { id: -3 }, { id, again: true }]) {
        call(`job_restart ${JSON.stringify(input)}`, () => tools.job_restart.run(input));
      }
      for (const raw of ['-1', 'abc', '1e3', '', ' 1 2 ', Number.NaN, -1, 1.5, '123456']) {
        call(`/job-kill ${JSON.stringify(raw)}`, () => tools.userKill(raw as string));
      }
      // Invalid environments from the call's context.
      for (const env of [{ 'A=B': 'x' }, { A: 'x\0y' }, { A: 5 }, { '': 'x' }, { 'A\0B': 'x' }, { A: {} }, { A: ['x'] }]) {
        call(`background with env ${JSON.stringify(env)}`, () => tools.background.run({ command: 'true' }, { env: env as unknown as NodeJS.ProcessEnv }));
      }

      for (const [name, run] of calls) {
        let answer: unknown;
        try {
          answer = await run();
        } catch (error) {
          failures.push(`${name} threw ${(error as Error).stack ?? String(error)}`);
          continue;
        }
        if (typeof answer !== 'string' || answer.trim().length === 0) {
          failures.push(`${name} answered ${JSON.stringify(answer)}`);
          continue;
        }
        answers.push(`${name} -> ${answer.split('\n')[0]!.slice(0, 200)}`);
        // A sentence that says what was wrong, not a report of a started or stopped job.
        if (!/bad input|there is no job|is not a job number|bad lock/.test(answer)) failures.push(`${name} answered without saying what was wrong: ${answer.slice(0, 300)}`);
        if (/^job \d+ (running|killed|exited)/.test(answer)) failures.push(`${name} acted on a job: ${answer.slice(0, 300)}`);
      }
      if (runtime.list().length !== jobsBefore) failures.push(`bad input created jobs: ${runtime.list().map((job) => job.header).join(' | ')}`);
      if (events.length !== eventsBefore) failures.push(`bad input caused job events: ${JSON.stringify(events.slice(eventsBefore))}`);

      // A cwd that is a file: the job cannot start, and the answer says why.
      const cwdAnswer = await tools.background.run({ command: 'true' }, { cwd: file });
      answers.push(`background with a file as cwd -> ${cwdAnswer.split('\n')[0]}`);
      if (!cwdAnswer.includes(`the working directory ${file} is not a directory`)) failures.push(`a file as cwd answered: ${cwdAnswer}`);
      if (runtime.list().some((job) => job.state === 'running' && job.id !== id)) failures.push('a file as cwd left a running job');

      // The library's own API throws typed errors for the same mistakes.
      const libraryCalls: [string, () => Promise<unknown>][] = [
        ['background env A=B', () => runtime.background({ command: 'true', env: { 'A=B': 'x' } })],
        ['background env NUL', () => runtime.background({ command: 'true', env: { A: 'x\0y' } })],
        ['background env number', () => runtime.background({ command: 'true', env: { A: 5 } as unknown as NodeJS.ProcessEnv })],
        ['background command NUL', () => runtime.background({ command: 'a\0b' })],
        ['background 1 MB command', () => runtime.background({ command: huge })],
        ['locks "nocolon"', () => runtime.locks.acquire({ label: 'test' }, ['nocolon'])],
        ['locks "port:"', () => runtime.locks.acquire({ label: 'test' }, ['port:'])],
        ['locks 5', () => runtime.locks.acquire({ label: 'test' }, [5 as unknown as string])],
        ['status -1', () => runtime.status(-1)],
        ['kill HUP', () => runtime.kill(id, { signal: 'HUP' as 'TERM' })],
      ];
      for (const [name, run] of libraryCalls) {
        const outcome = await run().then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        );
        if (!('error' in outcome)) failures.push(`${name} was accepted: ${JSON.stringify(outcome.value).slice(0, 200)}`);
        else if (!(outcome.error instanceof HephError || outcome.error instanceof TypeError || outcome.error instanceof RangeError)) {
          failures.push(`${name} threw an untyped error: ${String(outcome.error)}`);
        } else answers.push(`library ${name} -> ${(outcome.error as Error).name} ${(outcome.error as { code?: string }).code ?? ''}: ${(outcome.error as Error).message.slice(0, 160)}`);
      }

      const still = await runtime.status(id);
      if (still.state !== 'running' || !isRunning(running.pid!)) failures.push(`the running job was disturbed:\n${still.text}`);
      console.log(`[${mode}] tool answers:\n  ${answers.join('\n  ')}`);
      summary(10, calls.length + libraryCalls.length + 1, failures.length, `${mode}, tools and library`);
      expect(failures).toEqual([]);
    } finally {
      await runtime.close();
      await oracle.waitEof(10_000);
      oracle.dispose();
    }
  });
});
