/**
 * The requests the supervisor answers on its own, spoken to a bare supervisor over the protocol
 * (no JobRuntime): the one-round-trip wait inside `read`, `cleanup-lost` (stop what a dead
 * supervisor left) and `diagnostics`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SupervisorConfig } from '../../src/protocol/messages.js';
import { lockFileName } from '../../supervisor/locks/kernel-locks.js';
import { bareConfig, bareSupervisorsClosedAfterEach, startBareSupervisor } from '../helpers/hardening.js';
import { isRunning, startTime, waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { tempDir } from '../helpers/runtime.js';

type Bare = ReturnType<typeof startBareSupervisor>;
type Reply = { id: number; ok: boolean; value?: any; error?: { code?: string; message?: string } };

const startBare = bareSupervisorsClosedAfterEach();
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

const config = (mode: string, output: Partial<SupervisorConfig['output']> = {}) => bareConfig(mode, tempDir(), output);

/** What each bare supervisor said its instance was (its hello reply). */
const liveInstances = new Map<Bare, { pid: number; start: string; boot: string }>();

async function bareSupervisor(mode: string, output: Partial<SupervisorConfig['output']> = {}): Promise<Bare> {
  const bare = startBare();
  const hello = (await bare.request({ type: 'hello', config: config(mode, output) })) as Reply;
  expect(hello).toMatchObject({ ok: true, value: { pid: bare.child.pid, instance: { pid: bare.child.pid, start: startTime(bare.child.pid!) } } });
  liveInstances.set(bare, hello.value.instance);
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

    // What one scan of the line costs here and now (rendering 6 MiB of escapes and matching them:
    // a few tenths of a second, far more on a loaded machine): a wait of 1 ms still scans once.
    const beforeOne = cpuTicks(bare.child.pid!);
    const once = (await bare.request({ type: 'read', params: { job, tail: 0, wait: { ms: 1, until: until('never printed') } } }, 15_000)) as Reply;
    expect(once.value.waited).toMatchObject({ kind: 'timed-out' });
    const oneScan = Math.max(1, cpuTicks(bare.child.pid!) - beforeOne);
    // A wait that lasts six scans: scanning again and again would cost all of it. One that sleeps
    // costs its one scan and the collection of what that scan made (measured: 1.5-1.8 scans).
    const waitMs = Math.max(2_000, oneScan * 10 * 6);
    const before = cpuTicks(bare.child.pid!);
    const waiting = bare.request({ type: 'read', params: { job, tail: 0, wait: { ms: waitMs, until: until('never printed') } } }, waitMs + 15_000);
    for (let i = 0; i < 8; i++) {
      await new Promise((resolve) => setTimeout(resolve, waitMs / 10));
      expect(await bare.request({ type: 'ping' }, 5_000)).toMatchObject({ ok: true });
    }
    const reply = (await waiting) as Reply;
    const used = cpuTicks(bare.child.pid!) - before;
    expect(reply.value.waited).toMatchObject({ kind: 'timed-out' });
    console.log(`[${mode}] one scan of a 6 MiB unfinished line took ${oneScan} CPU ticks; a ${waitMs} ms wait on it ${used}`);
    expect(used).toBeLessThan(oneScan * 3 + 20);
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

/** Where the supervisor's descriptors point that are open on files of /proc/`pid` (kernel truth: its fd links). */
function procFilesHeld(supervisor: number, pid: number): string[] {
  const held: string[] = [];
  for (const fd of fs.readdirSync(`/proc/${supervisor}/fd`)) {
    try {
      const target = fs.readlinkSync(`/proc/${supervisor}/fd/${fd}`);
      if (target.startsWith(`/proc/${pid}/`)) held.push(target.slice(`/proc/${pid}/`.length));
    } catch {
      // closed while listed
    }
  }
  return held.sort();
}

describe.each(modeRows())('a status\'s stats through kept /proc descriptors (%s)', (mode, skip) => {
  it.skipIf(skip)('keeps the members\' files open while they are members, reads them fresh, and gives them back', async () => {
    const bare = await bareSupervisor(mode);
    const supervisor = bare.child.pid!;
    // The leader starts a child, then on "go" stops it and grows to 80 MB resident at the same pid (exec).
    const grow = `exec ${process.execPath} -e 'globalThis.b = Buffer.alloc(80e6, 1); console.log("big"); setInterval(() => {}, 1e6)'`;
    const job = await spawnJob(bare, `sleep 60 & echo "child $!"; read go; kill $!; wait; ${grow}`, true);
    const started = (await bare.request({ type: 'read', params: { job, tail: 5, wait: { ms: 10_000, until: until('^child'), from: -1 } } })) as Reply;
    const leader: number = started.value.facts.pid;
    const child = Number(started.value.waited.line.split(' ')[1]);
    expect(started.value.facts.stats.procs).toBe(2);
    // Which files a status reads per member: statm where the job's cgroup has no memory.current,
    // stat where it has no cpu.stat (the process-group mode has neither).
    const cgroup: string | null = started.value.facts.cgroup;
    const perMember = [
      ...(cgroup !== null && fs.existsSync(path.join(cgroup, 'cpu.stat')) ? [] : ['stat']),
      ...(cgroup !== null && fs.existsSync(path.join(cgroup, 'memory.current')) ? [] : ['statm']),
    ];
    expect(procFilesHeld(supervisor, leader)).toEqual(perMember);
    expect(procFilesHeld(supervisor, child)).toEqual(perMember);
    const small = started.value.facts.stats.memoryBytes as number;

    // The child is gone (killed and waited for by the leader): its descriptors are given back at
    // the next status. The leader's are read again, and show it as it is now: 80 MB more.
    const waiting = bare.request({ type: 'read', params: { job, tail: 1, wait: { ms: 20_000, until: until('^big$') } } }, 30_000);
    expect(await bare.request({ type: 'write', job, data: Buffer.from('go\n'), close: false })).toMatchObject({ ok: true });
    const grown = (await waiting) as Reply;
    expect(grown.value.waited).toMatchObject({ kind: 'matched', line: 'big' });
    expect(procFilesHeld(supervisor, child)).toEqual([]);
    expect(grown.value.facts.stats.procs).toBe(1);
    expect(procFilesHeld(supervisor, leader)).toEqual(perMember);
    expect(grown.value.facts.stats.memoryBytes).toBeGreaterThan(small + 70e6);

    // Cleaned up: nothing of the job's processes is held.
    expect(await bare.request({ type: 'kill', params: { job, signal: 'KILL', graceMs: 0 } })).toMatchObject({ ok: true, value: { facts: { cleanedUp: true } } });
    expect(procFilesHeld(supervisor, leader)).toEqual([]);
  });
});

describe.each(modeRows())('a kill that reads (%s)', (mode, skip) => {
  it.skipIf(skip)("answers with the job's facts (stats while it runs) and the read it asked for; without a read, with the facts alone", async () => {
    const bare = await bareSupervisor(mode);
    // INT is ignored (an ignored signal stays ignored across exec): the INT kill outlives its grace.
    const reading = await spawnJob(bare, "trap '' INT; echo one; echo two; echo three; exec sleep 1000");
    const plain = await spawnJob(bare, 'echo alone; exec sleep 1000');
    for (const job of [reading, plain]) {
      const ready = (await bare.request({ type: 'read', params: { job, tail: 1, wait: { ms: 10_000, until: until('^(three|alone)$'), from: -1 } } })) as Reply;
      expect(ready.value.waited).toMatchObject({ kind: 'matched' });
    }
    const read = { tail: 2, maxBytes: 4096 };
    const outlived = (await bare.request({ type: 'kill', params: { job: reading, signal: 'INT', graceMs: 100, read } })) as Reply;
    expect(outlived).toMatchObject({ ok: true, value: { facts: { job: reading, cleanedUp: false, exit: null, stats: { procs: 1 } } } });
    expect(outlived.value.output.lines.map((line: { text: string }) => line.text)).toEqual(['two', 'three']);

    const killed = (await bare.request({ type: 'kill', params: { job: reading, signal: 'KILL', graceMs: 0, read } })) as Reply;
    expect(killed).toMatchObject({ ok: true, value: { facts: { job: reading, cleanedUp: true, procs: 0, exit: { signal: 'SIGKILL' } } } });
    expect(killed.value.output).toMatchObject({ totalLines: 3 });
    expect(killed.value.output.lines.map((line: { stream: string; text: string }) => `${line.stream} ${line.text}`)).toEqual(['stdout two', 'stdout three']);

    const bareKill = (await bare.request({ type: 'kill', params: { job: plain, signal: 'KILL', graceMs: 0 } })) as Reply;
    expect(bareKill).toMatchObject({ ok: true, value: { facts: { job: plain, cleanedUp: true } } });
    expect(Object.keys(bareKill.value)).toEqual(['facts']);
  });
});

/** The environment a job's shell was started with (it has printed "ready": past its execve), less HEPH_JOB. */
async function shellEnvironment(bare: Bare, job: number): Promise<string[]> {
  const ready = (await bare.request({ type: 'read', params: { job, tail: 1, wait: { ms: 10_000, until: until('^ready'), from: -1 } } })) as Reply;
  expect(ready.value.waited).toMatchObject({ kind: 'matched' });
  const pid = ready.value.facts.pid as number;
  return fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter((entry) => entry !== '' && !entry.startsWith('HEPH_JOB='));
}

describe('the base environment (request environment, spawn envBase)', () => {
  it('builds a job\'s environment from the base, its unset names and its entries; refuses a base it does not hold and bad entries', async () => {
    const bare = await bareSupervisor('process-group');
    const PATH = `PATH=${process.env.PATH}`;
    expect(await bare.request({ type: 'environment', version: 1, entries: [PATH, 'A=base', 'B=gone', 'C=kept'] })).toMatchObject({ ok: true, value: null });
    const spawnWith = (job: number, fields: Record<string, unknown>) =>
      bare.request({ type: 'spawn', params: { job, command: 'echo ready; read line', cwd: '/', stdin: true, merge: false, shell: '/bin/sh', ...fields } }) as Promise<Reply>;

    expect(await spawnWith(0, { env: [] , envBase: 1 })).toMatchObject({ ok: true });
    expect(await shellEnvironment(bare, 0)).toEqual([PATH, 'A=base', 'B=gone', 'C=kept']);
    // A changed variable keeps its place, an unset one goes, a new one comes last.
    expect(await spawnWith(1, { env: ['A=over', 'D=new=value'], envBase: 1, envUnset: ['B', 'NEVER_SET'] })).toMatchObject({ ok: true });
    expect(await shellEnvironment(bare, 1)).toEqual([PATH, 'A=over', 'C=kept', 'D=new=value']);
    // Without envBase: the entries are the whole environment (the base is not used).
    expect(await spawnWith(2, { env: [PATH, 'ONLY=this'] })).toMatchObject({ ok: true });
    expect(await shellEnvironment(bare, 2)).toEqual([PATH, 'ONLY=this']);

    const refused: [string, Record<string, unknown>, string][] = [
      ['a base not held', { type: 'spawn', params: { job: 10, command: 'true', cwd: '/', env: [], envBase: 2, stdin: false, merge: false, shell: '/bin/sh' } }, 'envBase 2'],
      ['envUnset without envBase', { type: 'spawn', params: { job: 11, command: 'true', cwd: '/', env: [PATH], envUnset: ['A'], stdin: false, merge: false, shell: '/bin/sh' } }, 'envUnset'],
      ['an entry without =', { type: 'spawn', params: { job: 12, command: 'true', cwd: '/', env: ['PATH'], stdin: false, merge: false, shell: '/bin/sh' } }, 'params.env[0]'],
      ['an entry with no name', { type: 'spawn', params: { job: 13, command: 'true', cwd: '/', env: ['=x'], envBase: 1, stdin: false, merge: false, shell: '/bin/sh' } }, 'params.env[0]'],
      ['an unset name with =', { type: 'spawn', params: { job: 14, command: 'true', cwd: '/', env: [], envBase: 1, envUnset: ['A=B'], stdin: false, merge: false, shell: '/bin/sh' } }, 'params.envUnset[0]'],
      ['a NUL in an entry', { type: 'spawn', params: { job: 15, command: 'true', cwd: '/', env: ['A=x\0y'], envBase: 1, stdin: false, merge: false, shell: '/bin/sh' } }, 'params.env[0]'],
      ['a base of version 0', { type: 'environment', version: 0, entries: [] }, 'version'],
      ['a base entry without =', { type: 'environment', version: 3, entries: [PATH, 'NOEQUALS'] }, 'entries[1]'],
      ['a base that is not a list', { type: 'environment', version: 3, entries: 'A=B' }, 'entries'],
    ];
    for (const [what, request, named] of refused) {
      const reply = (await bare.request(request)) as Reply;
      expect({ what, ok: reply.ok }).toEqual({ what, ok: false });
      expect(reply.error?.message).toContain(named);
    }
    // Nothing was spawned by a refused spawn, and a refused base did not replace the one held.
    for (const job of [10, 11, 12, 13, 14, 15]) expect(await bare.request({ type: 'facts', job })).toMatchObject({ ok: false, error: { code: 'ERR_JOB_NOT_FOUND' } });
    expect(await spawnWith(3, { env: [], envBase: 1 })).toMatchObject({ ok: true });
    expect(await shellEnvironment(bare, 3)).toEqual([PATH, 'A=base', 'B=gone', 'C=kept']);
  });

  it('refuses a base before hello', async () => {
    const bare = startBare();
    expect(await bare.request({ type: 'environment', version: 1, entries: ['A=B'] })).toMatchObject({ ok: false, error: { message: expect.stringContaining('hello must come first') } });
  });
});

describe('diagnostics', () => {
  it('lists what the supervisor has loaded: never child_process', async () => {
    const bare = startBare();
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

/** The identity of a process that ran and was reaped: a supervisor instance that is dead. */
async function deadInstance(): Promise<{ pid: number; start: string; boot: string }> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  await waitUntil(() => startTime(child.pid!) !== null, 'the sleep to start');
  const start = startTime(child.pid!)!;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return { pid: child.pid!, start, boot: BOOT };
}

const BOOT = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
const marker = (instance: { pid: number; start: string }, job: number) => `${instance.pid}-${instance.start}:${job}`;

describe('cleanup-lost', () => {
  it('stops every process carrying the dead instance\'s marker, and nothing else', async () => {
    const bare = await bareSupervisor('process-group');
    const dead = await deadInstance();
    // A live process whose instance name the dead one's is a prefix of (without the colon): the
    // negative control for prefix matching, immune to any sweep (its instance is alive).
    const live = sleeper({});
    await waitUntil(() => isRunning(live.pid!), 'the live process to run');
    const liveName = { pid: live.pid!, start: startTime(live.pid!)! };
    const prefixOfLive = { pid: liveName.pid, start: liveName.start.slice(0, -1), boot: BOOT };
    const marked = [sleeper({ HEPH_JOB: marker(dead, 0) }), sleeper({ HEPH_JOB: marker(dead, 7) })];
    const spared = [sleeper({ HEPH_JOB: marker(liveName, 0) }), sleeper({ HEPH_JOB: `${liveName.pid}:0` }), sleeper({})];
    for (const child of [...marked, ...spared]) await waitUntil(() => isRunning(child.pid!), `sleeper ${child.pid} to run`);

    for (const instance of [dead, prefixOfLive]) {
      const reply = await bare.request({ type: 'cleanup-lost', supervisor: instance, jobs: [] }, 20_000);
      expect(reply).toMatchObject({ ok: true });
    }
    for (const child of marked) await waitUntil(() => child.signalCode !== null, `marked sleeper ${child.pid} to be killed`);
    expect(marked.map((child) => child.signalCode)).toEqual(['SIGKILL', 'SIGKILL']);
    expect([live, ...spared].map((child) => isRunning(child.pid!))).toEqual([true, true, true, true]);
  });

  it('refuses cgroup paths outside the dead instance\'s subtree, malformed identities, and anything before hello', async () => {
    const early = startBare();
    const dead = await deadInstance();
    const before = (await early.request({ type: 'cleanup-lost', supervisor: dead, jobs: [] })) as Reply;
    expect(before).toMatchObject({ ok: false, error: { message: expect.stringContaining('hello must come first') } });

    const bare = await bareSupervisor('process-group');
    for (const supervisor of [
      { pid: dead.pid, start: '../../x', boot: BOOT },
      { pid: dead.pid, start: dead.start, boot: 'not-a-boot-id' },
      { pid: dead.pid, cgroupRoot: null },
    ]) {
      const reply = (await bare.request({ type: 'cleanup-lost', supervisor, jobs: [] })) as Reply;
      expect(reply).toMatchObject({ ok: false, error: { code: 'ERR_PROTOCOL', message: expect.stringMatching(/supervisor\.(start|boot)/) } });
    }
    const job = (await bare.request({
      type: 'cleanup-lost',
      supervisor: dead,
      jobs: [{ pid: null, start: null, cgroup: `/sys/fs/cgroup/heph-jobs-${dead.pid}-${dead.start}0/job-0` }],
    })) as Reply;
    expect(job).toMatchObject({ ok: false, error: { code: 'ERR_PROTOCOL', message: expect.stringContaining(`heph-jobs-${dead.pid}-${dead.start}0`) } });
  });
});

describe.each(modeRows())('cleanup-lost of a dead instance whose pid a live supervisor has (%s)', (mode, skip) => {
  it.skipIf(skip)('spares the live supervisor\'s jobs and cgroups, and stops what carries the dead instance\'s marker', async () => {
    const cleaner = await bareSupervisor(mode);
    const live = await bareSupervisor(mode);
    const instance = liveInstances.get(live)!;
    const job = await spawnJob(live, 'exec sleep 60');
    const facts = ((await live.request({ type: 'facts', job })) as Reply).value;
    const liveCgroup: string | null = facts.cgroup;
    expect(liveCgroup === null).toBe(mode !== 'cgroup');
    // The dead instance had the live supervisor's pid, with another start time (a recycled pid).
    const dead = { pid: instance.pid, start: String(Number(instance.start) - 1), boot: BOOT };
    const leftover = sleeper({ HEPH_JOB: marker(dead, job) });
    await waitUntil(() => isRunning(leftover.pid!), 'the dead instance\'s leftover to run');

    const reply = await cleaner.request({ type: 'cleanup-lost', supervisor: dead, jobs: [] }, 20_000);
    expect(reply).toMatchObject({ ok: true });
    await waitUntil(() => leftover.signalCode !== null, 'the leftover to be killed');
    // The live supervisor's job runs on, in its cgroup, and it can start another.
    expect(((await live.request({ type: 'facts', job })) as Reply).value).toMatchObject({ exit: null, procs: 1 });
    expect(isRunning(facts.pid)).toBe(true);
    if (liveCgroup !== null) expect(fs.readFileSync(path.join(liveCgroup, 'cgroup.procs'), 'latin1').trim()).toBe(String(facts.pid));
    await spawnJob(live, 'exit 0');
  });

  it.skipIf(skip)('a lock whose holder record names that dead instance spares them too', async () => {
    const live = await bareSupervisor(mode);
    const instance = liveInstances.get(live)!;
    const job = await spawnJob(live, 'exec sleep 60');
    const facts = ((await live.request({ type: 'facts', job })) as Reply).value;
    const dead = { pid: instance.pid, start: String(Number(instance.start) - 1), boot: BOOT };
    // The record left in the lock file names the dead instance, and (forged or stale) the live
    // supervisor's job cgroup.
    const lockDir = tempDir();
    const resource = 'port:47123';
    // (A record in the format holders write, supervisor/locks/records.ts, plus a field no holder writes.)
    const record = { v: 2, resource, mode: 'exclusive', ...dead, token: '0123456789abcdef', owner: 'x', job, cgroup: facts.cgroup, since: 0 };
    fs.writeFileSync(path.join(lockDir, lockFileName(resource)), `${JSON.stringify(record)}\n`);
    const taker = startBare();
    expect(await taker.request({ type: 'hello', config: { ...config(mode), lockDir } })).toMatchObject({ ok: true });
    // After the taker's start sweep, so only the lock's dead-holder path can stop it.
    const leftover = sleeper({ HEPH_JOB: marker(dead, job) });
    await waitUntil(() => isRunning(leftover.pid!), 'the dead instance\'s leftover to run');

    const lock = { type: 'lock', lease: 1, resources: [{ resource, kind: 'port', value: '47123', mode: 'exclusive' }], owner: { label: 'test', job: null } };
    expect(await taker.request(lock, 20_000)).toMatchObject({ ok: true });
    await waitUntil(() => leftover.signalCode !== null, 'the leftover to be killed');
    expect(((await live.request({ type: 'facts', job })) as Reply).value).toMatchObject({ exit: null, procs: 1 });
    if (facts.cgroup !== null) expect(fs.readFileSync(path.join(facts.cgroup, 'cgroup.procs'), 'latin1').trim()).toBe(String(facts.pid));
    await spawnJob(live, 'exit 0');
  });
});
