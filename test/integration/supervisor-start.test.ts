/**
 * When the supervisor starts (issue 14): `startSupervisor: 'eager'` starts it with the runtime,
 * before any call; the default, `lazy`, starts it with the first call that needs it. The oracle is
 * the kernel's list of this process's children, by the title the supervisor gives itself.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { JobRuntime } from '../../src/index.js';
import { supervisorPid } from '../../src/testing.js';
import { waitUntil } from '../helpers/kernel.js';
import { waitForOutput } from '../helpers/runtime.js';

/** Live supervisors among this process's children (/proc/PID/task/TID/children, every thread). */
function supervisorChildren(): number[] {
  const children = fs
    .readdirSync(`/proc/${process.pid}/task`)
    .flatMap((tid) => fs.readFileSync(`/proc/${process.pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
  return children.filter((pid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2)[0];
      return state !== 'Z' && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('heph-jobs supervisor');
    } catch {
      return false; // gone
    }
  });
}

describe('supervisor start', () => {
  it('eager starts the supervisor with the runtime and the first call uses it; lazy (the default) waits for a call', async () => {
    expect(supervisorChildren()).toEqual([]);
    const lazy = await JobRuntime.start();
    const eager = await JobRuntime.start({ startSupervisor: 'eager' });
    try {
      // No call yet: the eager runtime's supervisor appears by itself (and is its first call's).
      await waitUntil(() => supervisorChildren().length === 1, 'the eager runtime to start its supervisor', 10_000, supervisorChildren);
      const [started] = supervisorChildren();
      await eager.capabilities();
      expect(supervisorPid(eager)).toBe(started);
      expect(supervisorChildren()).toEqual([started]);
      // The lazy runtime, made first, has started nothing all this time (the control: a call does).
      expect(supervisorPid(lazy)).toBeNull();
      await lazy.capabilities();
      expect(supervisorChildren().sort()).toEqual([started, supervisorPid(lazy)].sort());
    } finally {
      await eager.close();
      await lazy.close();
    }
    expect(supervisorChildren()).toEqual([]);
  });

  it('an eager runtime closed at once stops the supervisor it was starting', async () => {
    const eager = await JobRuntime.start({ startSupervisor: 'eager' });
    await eager.close();
    expect(supervisorChildren()).toEqual([]);
  });

  it('the supervisor boots without NODE_EXTRA_CA_CERTS (Node parses it at boot) and with one malloc arena; jobs get the runtime environment', async () => {
    const saved = process.env.NODE_EXTRA_CA_CERTS;
    const savedArenas = process.env.MALLOC_ARENA_MAX;
    delete process.env.MALLOC_ARENA_MAX;
    process.env.NODE_EXTRA_CA_CERTS = '/etc/ssl/certs/heph-jobs-test-bundle.crt';
    const runtime = await JobRuntime.start({ settleMs: 0 });
    try {
      // No `exec`: /proc/PID/environ reads empty while a process is in the middle of an execve.
      const job = await runtime.background({ command: 'printf "%s\\n" "$NODE_EXTRA_CA_CERTS"; sleep 60' });
      await waitForOutput(runtime, job.id, 'heph-jobs-test-bundle');
      const environ = fs.readFileSync(`/proc/${supervisorPid(runtime)}/environ`, 'utf8').split('\0');
      expect(environ.some((entry) => entry.startsWith('HEPH_JOBS_PARENT_PID='))).toBe(true);
      expect(environ.filter((entry) => entry.startsWith('NODE_EXTRA_CA_CERTS='))).toEqual([]);
      expect(environ.filter((entry) => entry.startsWith('MALLOC_ARENA_MAX='))).toEqual(['MALLOC_ARENA_MAX=1']);
      // The control: the job's environment is the runtime's, variable included, the supervisor's own tuning not.
      const jobEnviron = fs.readFileSync(`/proc/${job.pid}/environ`, 'utf8').split('\0');
      expect(jobEnviron).toContain('NODE_EXTRA_CA_CERTS=/etc/ssl/certs/heph-jobs-test-bundle.crt');
      expect(jobEnviron.filter((entry) => entry.startsWith('MALLOC_ARENA_MAX='))).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
      else process.env.NODE_EXTRA_CA_CERTS = saved;
      if (savedArenas !== undefined) process.env.MALLOC_ARENA_MAX = savedArenas;
      await runtime.close();
    }
  });

  it('refuses an unknown startSupervisor', async () => {
    await expect(JobRuntime.start({ startSupervisor: 'soon' as 'eager' })).rejects.toThrow(
      'option startSupervisor must be one of eager, lazy; received "soon"',
    );
  });
});
