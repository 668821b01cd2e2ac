/**
 * Item 12 of issue 12: a job whose setup fails after its leader was spawned (an inotify ENOSPC
 * from fs.watch on its cgroup.events, say) must not stay running, unregistered, holding the
 * supervisor's descriptors. The failure is injected (HEPH_JOBS_INJECT_FAULT=job-watch) at the
 * last step of the setup, after the stdin pipe is wrapped; the oracles are kernel truth: a FIFO every
 * job process holds reaches EOF, the supervisor has no child left (not even a zombie), and its
 * /proc/PID/fd is as it was before the spawn.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { childrenOf } from '../../supervisor/platform/procfs.js';
import { bareConfig, bareSupervisorsClosedAfterEach, SharedEofOracle, type BareSupervisor as Bare } from '../helpers/hardening.js';
import { modeRows } from '../helpers/modes.js';
import { tempDir } from '../helpers/runtime.js';

type Reply = { id: number; ok: boolean; value?: any; error?: { code?: string; message?: string } };

const startBare = bareSupervisorsClosedAfterEach();
const oracles: SharedEofOracle[] = [];

afterEach(() => {
  for (const oracle of oracles.splice(0)) oracle.dispose();
});

const config = (mode: string) => bareConfig(mode, tempDir());

async function bareSupervisor(mode: string, env: NodeJS.ProcessEnv = {}): Promise<Bare> {
  const bare = startBare(env);
  expect(await bare.request({ type: 'hello', config: config(mode) })).toMatchObject({ ok: true });
  return bare;
}

/** What the supervisor's descriptors point at (pipes, pidfds, sockets, ...), sorted. */
function descriptors(pid: number): string[] {
  return fs
    .readdirSync(`/proc/${pid}/fd`)
    .map((fd) => {
      try {
        return `${fd} -> ${fs.readlinkSync(`/proc/${pid}/fd/${fd}`)}`;
      } catch {
        return `${fd} -> (closed)`;
      }
    })
    // A /proc file is open only for the moment the supervisor reads it, and /proc itself only
    // while a scan lists it (its process scans run on their own timers, and the start sweep lists
    // /proc just after the hello): such a descriptor in one snapshot says nothing about the job.
    .filter((entry) => !/ -> \/proc(\/|$)/.test(entry) && !entry.endsWith('(closed)'))
    .sort();
}

function spawnRequest(job: number, oracle: SharedEofOracle, stdin: boolean) {
  // The leader and a child of it both hold the FIFO.
  const command = `${oracle.prefix} echo up; sleep 60 & exec sleep 60`;
  return { type: 'spawn', params: { job, command, cwd: '/', env: [`PATH=${process.env.PATH}`], stdin, merge: false, shell: '/bin/sh' } };
}

describe.each(modeRows())('a job whose setup fails after the spawn (%s)', (mode, skip) => {
  it.skipIf(skip)('is killed and reaped, every descriptor closed, and the spawn answered with a SpawnError', async () => {
    const bare = await bareSupervisor(mode, { HEPH_JOBS_INJECT_FAULT: 'job-watch' });
    const supervisor = bare.child.pid!;
    for (const [job, stdin] of [[0, false], [1, true]] as const) {
      // The test holds a write end too (the job may be killed before it opens its own); EOF once
      // the test lets go of it means no job process holds one.
      const oracle = new SharedEofOracle();
      oracles.push(oracle);
      const before = descriptors(supervisor);
      const reply = (await bare.request(spawnRequest(job, oracle, stdin), 20_000)) as Reply;
      expect(reply).toMatchObject({ ok: false, error: { code: 'ERR_SPAWN', message: expect.stringContaining('ENOSPC') } });
      expect(await oracle.finish(10_000), 'every process of the job is gone').toBe(true);
      expect(childrenOf(supervisor), 'the supervisor has no child left, not even a zombie').toEqual([]);
      expect(descriptors(supervisor)).toEqual(before);
      // It is not a job the supervisor knows.
      expect(await bare.request({ type: 'facts', job })).toMatchObject({ ok: false, error: { code: 'ERR_JOB_NOT_FOUND' } });
    }
  });

  it.skipIf(skip)('is stopped, reaped and closed when its output pipes cannot be wrapped after the reply', async () => {
    // The output pipes are wrapped in sockets once the spawn's reply is out: a failure there can
    // no longer be the spawn's answer, so the job is stopped (a job whose output cannot be read
    // must not run on unseen) and ends as any killed job does.
    const bare = await bareSupervisor(mode, { HEPH_JOBS_INJECT_FAULT: 'job-output' });
    const supervisor = bare.child.pid!;
    let before: string[] = [];
    // Job 0 only warms up: the event loop makes its one inotify instance at its first watch and
    // keeps it for good, which is no job's descriptor.
    for (const job of [0, 1]) {
      const oracle = new SharedEofOracle();
      oracles.push(oracle);
      if (job === 1) before = descriptors(supervisor);
      // A job that writes nothing: a write to the unread pipe would end it by SIGPIPE anyway.
      const quiet = spawnRequest(job, oracle, false);
      quiet.params.command = `${oracle.prefix} sleep 60 & exec sleep 60`;
      expect(await bare.request(quiet, 20_000)).toMatchObject({ ok: true });
      const cleaned = (message: unknown) => (message as { event?: string; job?: number }).event === 'cleaned-up' && (message as { job?: number }).job === job;
      expect(await bare.next(cleaned, 20_000)).toMatchObject({ job });
      expect(await oracle.finish(10_000), 'every process of the job is gone').toBe(true);
      expect(childrenOf(supervisor), 'the supervisor has no child left, not even a zombie').toEqual([]);
    }
    expect(descriptors(supervisor)).toEqual(before);
  });

  it.skipIf(skip)('the oracles see a job that runs (negative control: the same spawn without the fault)', async () => {
    const bare = await bareSupervisor(mode);
    const supervisor = bare.child.pid!;
    const oracle = new SharedEofOracle();
    oracles.push(oracle);
    const before = descriptors(supervisor);
    expect(await bare.request(spawnRequest(0, oracle, true))).toMatchObject({ ok: true });
    // Once it printed, the job holds the FIFO.
    const read = (await bare.request({ type: 'read', params: { job: 0, tail: 1, wait: { ms: 10_000, until: { source: '^up$', flags: '' }, from: -1 } } })) as Reply;
    expect(read.value.waited).toMatchObject({ kind: 'matched' });
    expect(await oracle.finish(300)).toBe(false);
    expect(childrenOf(supervisor)).toHaveLength(1);
    expect(descriptors(supervisor).length).toBeGreaterThan(before.length);
    expect(await bare.request({ type: 'kill', params: { job: 0, signal: 'KILL', graceMs: 0 } }, 20_000)).toMatchObject({ ok: true, value: { facts: { cleanedUp: true } } });
    expect(await oracle.finish(10_000)).toBe(true);
  });
});
