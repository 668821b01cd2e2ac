/**
 * The requests the supervisor answers on its own, spoken to a bare supervisor over the protocol
 * (no JobRuntime): the one-round-trip wait inside `read`, `cleanup-lost` (stop what a dead
 * supervisor left) and `diagnostics`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { SupervisorConfig } from '../../src/protocol/messages.js';
import { startBareSupervisor } from '../helpers/hardening.js';
import { isRunning, waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { tempDir } from '../helpers/runtime.js';

type Bare = ReturnType<typeof startBareSupervisor>;
type Reply = { id: number; ok: boolean; value?: any; error?: { code?: string; message?: string } };

const bares: Bare[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(
    bares.splice(0).map(async (bare) => {
      bare.socket.end();
      await bare.exited;
    }),
  );
});

function config(mode: string, output: Partial<SupervisorConfig['output']> = {}): SupervisorConfig {
  return {
    lockDir: tempDir(),
    containment: mode as SupervisorConfig['containment'],
    cgroupParent: null,
    forceFork: false,
    killGraceMs: 500,
    drainMs: 500,
    output: { maxLines: 2000, maxLineBytes: 8192, maxBytes: 4 * 1024 * 1024, headLines: 20, ...output },
  };
}

async function bareSupervisor(mode: string, output: Partial<SupervisorConfig['output']> = {}): Promise<Bare> {
  const bare = startBareSupervisor();
  bares.push(bare);
  expect(await bare.request({ type: 'hello', config: config(mode, output) })).toMatchObject({ ok: true });
  return bare;
}

let nextJob = 0;

async function spawnJob(bare: Bare, command: string, stdin = false): Promise<number> {
  const job = nextJob++;
  const reply = await bare.request({
    type: 'spawn',
    params: { job, command, cwd: '/', env: [`PATH=${process.env.PATH}`], stdin, merge: false, shell: '/bin/sh' },
  });
  expect(reply).toMatchObject({ ok: true });
  return job;
}

const until = (source: string) => ({ source, flags: '' });

/** CPU ticks (user + system, 1/100 s) the process has used so far. */
function cpuTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * Times the supervisor's main thread (its event loop) has gone to sleep and been woken: a wait
 * that polled would wake it every few ms, one that waits for events does not.
 */
function wakeups(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/task/${pid}/status`, 'latin1');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1]);
}

describe.each(modeRows())('a read that waits, one round trip (%s)', (mode, skip) => {
  it.skipIf(skip)('answers when the job ends, with its last output and its cleanup done', async () => {
    const bare = await bareSupervisor(mode);
    const job = await spawnJob(bare, 'sleep 0.3; echo last words');
    const reply = (await bare.request({ type: 'read', params: { job, tail: 10, wait: { ms: 10_000 } } })) as Reply;
    expect(reply.ok).toBe(true);
    expect(reply.value.waited).toMatchObject({ kind: 'ended' });
    expect(reply.value.waited.waitedMs).toBeLessThan(5_000);
    expect(reply.value.output.lines.map((line: { text: string }) => line.text)).toEqual(['last words']);
    expect(reply.value.facts).toMatchObject({ exit: { code: 0 }, cleanedUp: true });
  });

  it.skipIf(skip)('answers when the time is up, and sleeps while it waits', async () => {
    const bare = await bareSupervisor(mode);
    const job = await spawnJob(bare, 'exec sleep 60');
    const before = wakeups(bare.child.pid!);
    const reply = (await bare.request({ type: 'read', params: { job, tail: 1, wait: { ms: 1_000, until: until('never printed') } } })) as Reply;
    const woken = wakeups(bare.child.pid!) - before;
    expect(reply.value.waited).toMatchObject({ kind: 'timed-out' });
    expect(reply.value.waited.waitedMs).toBeGreaterThanOrEqual(1_000);
    expect(reply.value.facts).toMatchObject({ exit: null, cleanedUp: false });
    // A second of waiting. The process-group mode's backstop timer (every 50 ms) and the requests
    // wake it a few dozen times; a wait that polled every millisecond would wake it hundreds of times.
    console.log(`[${mode}] the supervisor woke ${woken} times during a 1 s wait`);
    expect(woken).toBeLessThan(150);
  });

  it.skipIf(skip)('matches only lines that arrive after the request, waking on the push', async () => {
    const bare = await bareSupervisor(mode);
    const job = await spawnJob(bare, 'echo ready; read answer; echo "ready again: $answer"; exec sleep 60', true);
    // The first "ready" is there before the wait (a wait from the first line sees it).
    const first = (await bare.request({ type: 'read', params: { job, tail: 1, wait: { ms: 10_000, until: until('^ready'), from: -1 } } })) as Reply;
    expect(first.value.waited).toMatchObject({ kind: 'matched', line: 'ready' });

    const waiting = bare.request({ type: 'read', params: { job, tail: 5, wait: { ms: 20_000, until: until('^ready') } } }, 30_000);
    // Nothing new yet: the wait must still be open after the old line was there to match.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bare.inbox.some((message) => (message as Reply).value?.waited !== undefined)).toBe(false);
    const written = Date.now();
    expect(await bare.request({ type: 'write', job, data: Buffer.from('go\n'), close: false })).toMatchObject({ ok: true });
    const reply = (await waiting) as Reply;
    expect(reply.value.waited).toMatchObject({ kind: 'matched', line: 'ready again: go' });
    expect(Date.now() - written).toBeLessThan(5_000);
  });

  it.skipIf(skip)('answers "ended" when a pattern never matches and the job ends', async () => {
    const bare = await bareSupervisor(mode);
    const job = await spawnJob(bare, 'echo something else; sleep 0.2');
    const reply = (await bare.request({ type: 'read', params: { job, tail: 5, wait: { ms: 10_000, until: until('ready') } } })) as Reply;
    expect(reply.value.waited).toMatchObject({ kind: 'ended' });
    expect(reply.value.facts.cleanedUp).toBe(true);
  });

  it.skipIf(skip)('sleeps while an unfinished line is longer than one scan of the wait', async () => {
    // 1.5 MiB of 0xff, no newline: rendered as \xFF it is 6 MiB, more than a wait scans at once.
    // Such a scan does not advance the cursor; the wait must sleep until something new arrives,
    // not re-read the line at once (which would freeze the supervisor, or burn its CPU).
    const bare = await bareSupervisor(mode, { maxLineBytes: 2 * 1024 * 1024, maxBytes: 8 * 1024 * 1024 });
    const job = await spawnJob(bare, "head -c 1572864 /dev/zero | tr '\\0' '\\377'; exec sleep 60");
    const rendered = '\\xFF'.repeat(1572864);
    const deadline = Date.now() + 10_000;
    let last: Reply;
    do {
      last = (await bare.request({ type: 'read', params: { job, tail: 1, maxBytes: 16 * 1024 * 1024 } })) as Reply;
      if (last.value.output.lines[0]?.text === rendered) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    } while (Date.now() < deadline);
    expect(last.value.output.lines[0]).toMatchObject({ partial: true, text: rendered });

    const before = cpuTicks(bare.child.pid!);
    const waiting = bare.request({ type: 'read', params: { job, tail: 0, wait: { ms: 2_000, until: until('never printed') } } }, 15_000);
    for (let i = 0; i < 8; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await bare.request({ type: 'ping' }, 5_000)).toMatchObject({ ok: true });
    }
    const reply = (await waiting) as Reply;
    const used = cpuTicks(bare.child.pid!) - before;
    expect(reply.value.waited).toMatchObject({ kind: 'timed-out' });
    // One scan of the line costs about a tenth of a second (rendering 6 MiB of escapes); scanning
    // it again and again for the whole wait costs most of its two seconds.
    console.log(`[${mode}] the supervisor used ${used} CPU ticks during a 2 s wait on a 6 MiB unfinished line`);
    expect(used).toBeLessThan(80);
  });

  it.skipIf(skip)('refuses a pattern that does not compile, and a wait of the wrong shape', async () => {
    const bare = await bareSupervisor(mode);
    const job = await spawnJob(bare, 'exec sleep 60');
    const bad = (await bare.request({ type: 'read', params: { job, wait: { ms: 100, until: until('(') } } })) as Reply;
    expect(bad).toMatchObject({ ok: false, error: { code: 'ERR_INVALID_INPUT', message: expect.stringContaining('until is not a valid regular expression') } });
    const shape = (await bare.request({ type: 'read', params: { job, wait: { ms: -1 } } })) as Reply;
    expect(shape).toMatchObject({ ok: false, error: { code: 'ERR_PROTOCOL', message: expect.stringContaining('params.wait.ms') } });
  });
});

describe('diagnostics', () => {
  it('lists what the supervisor has loaded: never child_process', async () => {
    const bare = startBareSupervisor();
    bares.push(bare);
    const reply = (await bare.request({ type: 'diagnostics' })) as Reply;
    expect(reply.ok).toBe(true);
    expect(reply.value.moduleLoadList.length).toBeGreaterThan(10);
    expect(reply.value.moduleLoadList.filter((name: string) => /child_process|process_wrap|spawn_sync/.test(name))).toEqual([]);
  });
});

/** A `sleep` started by the test (so the test reaps it), with `env` added to its environment. */
function sleeper(env: Record<string, string>, command = 'exec sleep 60'): ChildProcess {
  const child = spawn('/bin/sh', ['-c', command], { env: { PATH: process.env.PATH, ...env }, stdio: 'ignore', detached: true });
  children.push(child);
  return child;
}

/** A pid that names no process: one that ran and was reaped. */
async function deadPid(): Promise<number> {
  const child = spawn('/bin/true', [], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe('cleanup-lost', () => {
  it('stops every process carrying a dead supervisor\'s marker, and nothing else', async () => {
    const bare = await bareSupervisor('process-group');
    const dead = await deadPid();
    const marked = [sleeper({ HEPH_JOB: `${dead}:0` }), sleeper({ HEPH_JOB: `${dead}:7` })];
    // Negative controls: another supervisor's marker whose pid starts with the dead one's digits,
    // and no marker at all.
    const spared = [sleeper({ HEPH_JOB: `${dead}0:0` }), sleeper({})];
    for (const child of [...marked, ...spared]) await waitUntil(() => isRunning(child.pid!), `sleeper ${child.pid} to run`);

    const reply = await bare.request({ type: 'cleanup-lost', supervisor: { pid: dead, cgroupRoot: null }, jobs: [] }, 20_000);
    expect(reply).toMatchObject({ ok: true });
    for (const child of marked) await waitUntil(() => child.signalCode !== null, `marked sleeper ${child.pid} to be killed`);
    expect(marked.map((child) => child.signalCode)).toEqual(['SIGKILL', 'SIGKILL']);
    expect(spared.map((child) => isRunning(child.pid!))).toEqual([true, true]);
  });

  it('spares what runs below a live process that now has the dead supervisor\'s pid', async () => {
    const bare = await bareSupervisor('process-group');
    // The namesake: a live shell whose child carries a marker naming the shell's own pid, as a
    // recycled pid's owner would. A process with that marker outside its tree is the dead one's.
    const namesake = sleeper({}, 'HEPH_JOB=$$:0 sleep 60 & wait');
    const pid = namesake.pid!;
    const orphan = sleeper({ HEPH_JOB: `${pid}:0` });
    const below = () =>
      fs
        .readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1')
        .trim()
        .split(' ')
        .filter(Boolean)
        .map(Number);
    await waitUntil(() => below().length === 1 && isRunning(orphan.pid!), 'the namesake\'s child and the orphan to run');
    const child = below()[0]!;

    const reply = await bare.request({ type: 'cleanup-lost', supervisor: { pid, cgroupRoot: null }, jobs: [{ pid: null, cgroup: null }] }, 20_000);
    expect(reply).toMatchObject({ ok: true });
    await waitUntil(() => orphan.signalCode !== null, 'the orphan to be killed');
    expect(orphan.signalCode).toBe('SIGKILL');
    expect([isRunning(pid), isRunning(child)]).toEqual([true, true]);
  });

  it('refuses cgroup paths outside the dead supervisor\'s subtree, and anything before hello', async () => {
    const early = startBareSupervisor();
    bares.push(early);
    const before = (await early.request({ type: 'cleanup-lost', supervisor: { pid: 12345, cgroupRoot: null }, jobs: [] })) as Reply;
    expect(before).toMatchObject({ ok: false, error: { message: expect.stringContaining('hello must come first') } });

    const bare = await bareSupervisor('process-group');
    const dead = await deadPid();
    const root = (await bare.request({ type: 'cleanup-lost', supervisor: { pid: dead, cgroupRoot: '/sys/fs/cgroup/user.slice' }, jobs: [] })) as Reply;
    expect(root).toMatchObject({ ok: false, error: { code: 'ERR_PROTOCOL', message: expect.stringContaining('/sys/fs/cgroup/user.slice') } });
    const job = (await bare.request({
      type: 'cleanup-lost',
      supervisor: { pid: dead, cgroupRoot: null },
      jobs: [{ pid: null, cgroup: `/sys/fs/cgroup/heph-jobs-${dead}0/job-0` }],
    })) as Reply;
    expect(job).toMatchObject({ ok: false, error: { code: 'ERR_PROTOCOL', message: expect.stringContaining(`heph-jobs-${dead}0`) } });
  });
});
