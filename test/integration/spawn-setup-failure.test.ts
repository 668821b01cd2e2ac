/**
 * Item 12 of issue 12: a job whose setup fails after its leader was spawned (an inotify ENOSPC
 * from fs.watch on its cgroup.events, say) must not stay running, unregistered, holding the
 * supervisor's descriptors. The failure is injected (HEPH_JOBS_INJECT_FAULT=job-watch) at the
 * last step of the setup, after the pipes are wrapped; the oracles are kernel truth: a FIFO every
 * job process holds reaches EOF, the supervisor has no child left (not even a zombie), and its
 * /proc/PID/fd is as it was before the spawn.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { SupervisorConfig } from '../../src/protocol/messages.js';
import { childrenOf } from '../../supervisor/platform/procfs.js';
import { startBareSupervisor } from '../helpers/hardening.js';
import { EofOracle } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { tempDir } from '../helpers/runtime.js';

type Bare = ReturnType<typeof startBareSupervisor>;
type Reply = { id: number; ok: boolean; value?: any; error?: { code?: string; message?: string } };

const bares: Bare[] = [];
const oracles: EofOracle[] = [];

afterEach(async () => {
  await Promise.all(
    bares.splice(0).map(async (bare) => {
      bare.socket.end();
      await bare.exited;
    }),
  );
  for (const oracle of oracles.splice(0)) oracle.dispose();
});

function config(mode: string): SupervisorConfig {
  return {
    lockDir: tempDir(),
    containment: mode as SupervisorConfig['containment'],
    cgroupParent: null,
    forceFork: false,
    killGraceMs: 500,
    drainMs: 500,
    output: { maxLines: 2000, maxLineBytes: 8192, maxBytes: 4 * 1024 * 1024, headLines: 20 },
  };
}

async function bareSupervisor(mode: string, env: NodeJS.ProcessEnv = {}): Promise<Bare> {
  const bare = startBareSupervisor(env);
  bares.push(bare);
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
    .sort();
}

function spawnRequest(job: number, oracle: EofOracle, stdin: boolean) {
  // The leader and a child of it both hold the FIFO.
  const command = `${oracle.prefix} sleep 60 & exec sleep 60`;
  return { type: 'spawn', params: { job, command, cwd: '/', env: [`PATH=${process.env.PATH}`], stdin, merge: false, shell: '/bin/sh' } };
}

describe.each(modeRows())('a job whose setup fails after the spawn (%s)', (mode, skip) => {
  it.skipIf(skip)('is killed and reaped, every descriptor closed, and the spawn answered with a SpawnError', async () => {
    const bare = await bareSupervisor(mode, { HEPH_JOBS_INJECT_FAULT: 'job-watch' });
    const supervisor = bare.child.pid!;
    for (const [job, stdin] of [[0, false], [1, true]] as const) {
      const oracle = new EofOracle();
      oracles.push(oracle);
      const before = descriptors(supervisor);
      const reply = (await bare.request(spawnRequest(job, oracle, stdin), 20_000)) as Reply;
      expect(reply).toMatchObject({ ok: false, error: { code: 'ERR_SPAWN', message: expect.stringContaining('ENOSPC') } });
      expect(await oracle.eofWithin(10_000), 'every process of the job is gone').toBe(true);
      expect(childrenOf(supervisor), 'the supervisor has no child left, not even a zombie').toEqual([]);
      expect(descriptors(supervisor)).toEqual(before);
      // It is not a job the supervisor knows.
      expect(await bare.request({ type: 'facts', job })).toMatchObject({ ok: false, error: { code: 'ERR_JOB_NOT_FOUND' } });
    }
  });

  it.skipIf(skip)('the oracles see a job that runs (negative control: the same spawn without the fault)', async () => {
    const bare = await bareSupervisor(mode);
    const supervisor = bare.child.pid!;
    const oracle = new EofOracle();
    oracles.push(oracle);
    const before = descriptors(supervisor);
    expect(await bare.request(spawnRequest(0, oracle, true))).toMatchObject({ ok: true });
    expect(await oracle.eofWithin(300)).toBe(false);
    expect(childrenOf(supervisor)).toHaveLength(1);
    expect(descriptors(supervisor).length).toBeGreaterThan(before.length);
    expect(await bare.request({ type: 'kill', params: { job: 0, signal: 'KILL', graceMs: 0 } }, 20_000)).toMatchObject({ ok: true, value: { cleanedUp: true } });
    expect(await oracle.eofWithin(10_000)).toBe(true);
  });
});
