/**
 * Issue 14, spawn latency: the cgroup of the job expected next (the one after the newest spawned)
 * is made once a spawn has been answered, so the next spawn does not wait for the mkdir. Kernel
 * truth: the directory exists and holds no process before that spawn, the next job's leader is
 * born into it, a job that arrives out of turn gets a cgroup of its own, and close() leaves no
 * directory behind.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime } from '../helpers/runtime.js';

const procs = (dir: string) => fs.readFileSync(path.join(dir, 'cgroup.procs'), 'latin1').trim();
const cgroupOf = (pid: number) => fs.readFileSync(`/proc/${pid}/cgroup`, 'latin1').trim();

describe.each(modeRows().filter(([mode]) => mode === 'cgroup'))("the next job's cgroup, made ahead (%s)", (mode, skip) => {
  it.skipIf(skip)('exists empty after a spawn, is where the next job starts, and is gone after close()', async () => {
    const runtime = await startRuntime(mode, { settleMs: 0 });
    const root = (await runtime.capabilities()).containment.cgroupRoot!;
    // Negative control: before any spawn, nothing is made ahead.
    expect(fs.readdirSync(root).filter((name) => name.startsWith('job-'))).toEqual([]);
    const first = await runtime.background({ command: 'exec sleep 60' });
    expect(cgroupOf(first.pid!)).toMatch(/\/job-0$/);
    // Made after the reply, in a later turn of the supervisor's loop.
    await waitUntil(() => fs.existsSync(path.join(root, 'job-1')), 'job-1 to be made ahead');
    expect(procs(path.join(root, 'job-1'))).toBe('');
    const second = await runtime.background({ command: 'exec sleep 60' });
    expect(second.id).toBe(1);
    expect(cgroupOf(second.pid!)).toMatch(/\/job-1$/);
    expect(procs(path.join(root, 'job-1'))).toBe(String(second.pid));
    await waitUntil(() => fs.existsSync(path.join(root, 'job-2')), 'job-2 to be made ahead');
    await runtime.close();
    expect(fs.existsSync(root)).toBe(false);
  });

  it.skipIf(skip)('a job that waited for its locks starts in a cgroup of its own; the one made ahead stays empty', async () => {
    const runtime = await startRuntime(mode, { settleMs: 0 });
    const root = (await runtime.capabilities()).containment.cgroupRoot!;
    const holder = await runtime.locks.acquire({ label: 'test' }, ['port:7']);
    // Job 0 takes its number now and spawns only once the lock is free, after job 1.
    const waiting = runtime.background({ command: 'exec sleep 60', locks: ['port:7'] });
    const other = await runtime.background({ command: 'exec sleep 60' });
    expect(other.id).toBe(1);
    await waitUntil(() => fs.existsSync(path.join(root, 'job-2')), 'job-2 to be made ahead');
    holder.release();
    const late = await waiting;
    expect(late.id).toBe(0);
    expect(cgroupOf(late.pid!)).toMatch(/\/job-0$/);
    expect(procs(path.join(root, 'job-2'))).toBe('');
    await runtime.close();
    expect(fs.existsSync(root)).toBe(false);
  });
});
