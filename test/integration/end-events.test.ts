/**
 * How a job's end is told, and the one-way forget, against real processes in both modes:
 *
 * - A bare supervisor tells each job's exit exactly once: in an 'exited' event before its
 *   'cleaned-up', or (both ready in one turn) carried by the 'cleaned-up' itself; a job that
 *   leaves a process behind is told its exit first, then its cleanup, and that process is gone
 *   (a pipe it held reaches EOF).
 * - The runtime's host still hears 'exited' then 'cleaned-up' for every job, whichever way the
 *   supervisor told it.
 * - `forget` sent one way (no id) gets no reply; a refused one (a running job, a wrong field) is
 *   reported as a protocol-error event naming it, and changes nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { JobEvent } from '../../src/index.js';
import { encodeFrame } from '../../src/protocol/codec.js';
import { waitFor } from '../../src/testing.js';
import { bareConfig, bareSupervisorsClosedAfterEach, type BareSupervisor as Bare } from '../helpers/hardening.js';
import { EofOracle, isRunning } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, tempDir } from '../helpers/runtime.js';

type Message = { id?: number; ok?: boolean; event?: string; job?: number; code?: number | null; exit?: { code: number | null }; message?: string; value?: any; error?: { code?: string } };

const startBare = bareSupervisorsClosedAfterEach();
const oracles: EofOracle[] = [];

afterEach(() => {
  for (const oracle of oracles.splice(0)) oracle.dispose();
});

async function bareSupervisor(mode: string): Promise<Bare> {
  const bare = startBare();
  expect(await bare.request({ type: 'hello', config: bareConfig(mode, tempDir()) })).toMatchObject({ ok: true });
  return bare;
}

async function spawnJob(bare: Bare, job: number, command: string): Promise<number> {
  const reply = (await bare.request({
    type: 'spawn',
    params: { job, command, cwd: '/', env: [`PATH=${process.env.PATH}`], stdin: false, merge: false, shell: '/bin/sh' },
  })) as Message;
  expect(reply).toMatchObject({ ok: true });
  return reply.value.pid;
}

/** Job `job`'s end events, in the order they came, once its 'cleaned-up' is in. */
async function endEventsOf(bare: Bare, job: number): Promise<Message[]> {
  const ours = (message: unknown) => (message as Message).job === job && (message as Message).event !== undefined;
  await bare.next((message) => ours(message) && (message as Message).event === 'cleaned-up', 20_000).then((last) => bare.inbox.push(last));
  const events = bare.inbox.filter(ours) as Message[];
  bare.inbox.splice(0, bare.inbox.length, ...bare.inbox.filter((message) => !ours(message)));
  return events;
}

/** The exit code told for the job, checking it was told exactly once and never after the cleanup. */
function exitTold(events: Message[]): number | null | undefined {
  const last = events.at(-1)!;
  expect(last.event).toBe('cleaned-up');
  if (events.length === 1) {
    expect(last.exit, 'a lone cleaned-up event carries the exit').toBeDefined();
    return last.exit!.code;
  }
  expect(events.map((event) => event.event)).toEqual(['exited', 'cleaned-up']);
  expect(last.exit, 'an exit told before is not told again').toBeUndefined();
  return events[0]!.code;
}

describe.each(modeRows())('a job\'s end and the one-way forget (%s)', (mode, skip) => {
  it.skipIf(skip)('tells each job\'s exit exactly once, with its cleanup or before it', async () => {
    const bare = await bareSupervisor(mode);
    const told: string[] = [];
    for (let job = 0; job < 20; job++) {
      await spawnJob(bare, job, `exit ${job % 4}`);
      const events = await endEventsOf(bare, job);
      expect(exitTold(events)).toBe(job % 4);
      told.push(events.length === 1 ? 'one event' : 'two events');
    }
    console.log(`[${mode}] 20 short jobs' ends: ${told.filter((how) => how === 'one event').length} told in one event`);
  });

  it.skipIf(skip)('tells the exit of a job that leaves a process behind first, its cleanup once that is gone', async () => {
    const bare = await bareSupervisor(mode);
    const oracle = new EofOracle();
    oracles.push(oracle);
    // The leader exits 3 at once; the sleep holds the FIFO until the cleanup's TERM ends it.
    await spawnJob(bare, 0, `${oracle.prefix} sleep 60 & exit 3`);
    const exited = (await bare.next((message) => (message as Message).event === 'exited', 20_000)) as Message;
    expect(exited).toMatchObject({ job: 0, code: 3 });
    const events = await endEventsOf(bare, 0);
    expect(events).toHaveLength(1);
    expect(events[0]!.exit).toBeUndefined();
    // The test's read of the FIFO may trail the event: EOF within a bound, not at this instant.
    expect(await oracle.eofWithin(10_000), 'every process of the job is gone').toBe(true);
  });

  it.skipIf(skip)('forgets a cleaned-up job told one way, answering nothing; refuses a running job and a wrong field with an event', async () => {
    const bare = await bareSupervisor(mode);
    const oracle = new EofOracle();
    oracles.push(oracle);
    const pid = await spawnJob(bare, 0, `${oracle.prefix} exec sleep 60`);
    await spawnJob(bare, 1, 'true');
    await endEventsOf(bare, 1);

    const protocolError = (message: unknown) => (message as Message).event === 'protocol-error';
    bare.socket.write(encodeFrame({ type: 'forget', job: 0 }));
    expect(await bare.next(protocolError)).toMatchObject({ message: expect.stringMatching(/^one-way request forget: job 0 is still running/) });
    bare.socket.write(encodeFrame({ type: 'forget', job: 'x' }));
    expect(await bare.next(protocolError)).toMatchObject({ message: expect.stringContaining('request forget: job must be a whole number') });
    // A request that is not one way still needs its id.
    bare.socket.write(encodeFrame({ type: 'facts', job: 0 }));
    expect(await bare.next(protocolError)).toMatchObject({ message: expect.stringContaining('numeric id') });
    expect(await bare.request({ type: 'facts', job: 0 })).toMatchObject({ ok: true, value: { exit: null, cleanedUp: false } });
    expect(isRunning(pid), 'the refused forget left the job running').toBe(true);

    const before = bare.inbox.length;
    bare.socket.write(encodeFrame({ type: 'forget', job: 1 }));
    // Frames are served in order: this reply comes after the forget was.
    expect(await bare.request({ type: 'facts', job: 1 })).toMatchObject({ ok: false, error: { code: 'ERR_JOB_NOT_FOUND' } });
    expect(bare.inbox.slice(before), 'the one-way forget was not answered').toEqual([]);

    expect(await bare.request({ type: 'kill', params: { job: 0, signal: 'KILL', graceMs: 0 } }, 20_000)).toMatchObject({ ok: true, value: { facts: { cleanedUp: true } } });
    expect(await oracle.eofWithin(10_000)).toBe(true);
  });

  it.skipIf(skip)('the runtime\'s host hears exited, then cleaned-up, for every job, and evicted ones are gone', async () => {
    const runtime = await startRuntime(mode, { keepFinished: 2, settleMs: 0 });
    const events: JobEvent[] = [];
    runtime.onJobEvent((event) => events.push(event));
    try {
      const ids: number[] = [];
      for (let i = 0; i < 12; i++) ids.push((await runtime.background({ command: `exit ${i % 3}` })).id);
      const allCleaned = () => ids.every((id) => events.some((event) => event.type === 'cleaned-up' && event.job === id));
      expect(await waitFor(runtime, allCleaned, 20_000)).toBe(true);
      for (const id of ids) {
        const ends = events.filter((event) => event.job === id && (event.type === 'exited' || event.type === 'cleaned-up')).map((event) => event.type);
        expect(ends, `job ${id}'s end events`).toEqual(['exited', 'cleaned-up']);
      }
      // Two finished jobs are kept, and still read from the supervisor; the others were forgotten.
      expect(runtime.list().map((job) => job.id)).toEqual(ids.slice(-2));
      expect(await runtime.status(ids.at(-1)!)).toMatchObject({ state: 'exited', exitCode: 11 % 3 });
    } finally {
      await runtime.close();
    }
  });
});
