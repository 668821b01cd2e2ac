/**
 * OFD locks as the supervisor holds them. Two KernelLocks instances open their own file
 * descriptions, so they conflict exactly as two supervisors would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { locksOn, openedLockDir, scratchDir } from '../helpers/lock-dirs.js';
import { KernelLocks } from '../../supervisor/locks/kernel-locks.js';
import { normalizeResources } from '../../src/locks/index.js';
import { processStartTime } from '../../supervisor/platform/procfs.js';

function lockDir(): string {
  return path.join(scratchDir(), 'locks');
}

/** True when `b` could be taken while `a` is held (by another holder). */
async function compatible(a: string, b: string): Promise<boolean> {
  const dir = lockDir();
  const first = locksOn(dir);
  const second = locksOn(dir);
  await first.acquire(1, normalizeResources([parse(a)]), OWNER);
  const got = second.tryAcquire(2, normalizeResources([parse(b)]), OWNER);
  second.release(2);
  first.release(1);
  // Negative control for the pair: once the first is released, the second always gets it.
  expect(second.tryAcquire(3, normalizeResources([parse(b)]), OWNER)).toBe(true);
  second.release(3);
  return got;
}

const OWNER = { label: 'test', job: null };

function parse(text: string) {
  const [resource, mode] = text.split(' ');
  return { resource: resource!, mode: (mode ?? 'exclusive') as 'exclusive' | 'shared' };
}

describe('kernel locks', () => {
  it.each([
    ['port:5173', 'port:5173', false],
    ['port:5173', 'port:5174', true],
    ['port:5173 shared', 'port:5173 shared', true],
    ['port:5173 shared', 'port:5173', false],
    ['path:/repo/a', 'path:/repo/a/b', false],
    ['path:/repo/a/b', 'path:/repo/a', false],
    ['path:/repo/a/b', 'path:/repo/a/c', true],
    ['path:/repo/a/b', 'path:/repo/ab', true],
    ['path:/repo/a/b shared', 'path:/repo/a shared', true],
    ['path:/repo/a/b shared', 'path:/repo/a', false],
    ['path:/repo/a/b', 'path:/repo/a shared', false],
    ['path:/repo shared', 'path:/repo/a/b shared', true],
    ['path:/repo shared', 'path:/repo/a/b', false],
  ])('%s held, %s requested: compatible %s', async (held, requested, expected) => {
    expect(await compatible(held, requested)).toBe(expected);
  });

  it('hands a resource over when its holder releases it, and never holds part of a set', async () => {
    const dir = lockDir();
    const first = locksOn(dir);
    const second = locksOn(dir);
    await first.acquire(1, normalizeResources(['port:1']), OWNER);
    const waiting = second.acquire(2, normalizeResources(['port:2', 'port:1']), OWNER);
    // While it waits, port:2 must be free for a third holder (all-or-nothing).
    const third = locksOn(dir);
    await third.acquire(3, normalizeResources(['port:2']), OWNER);
    third.release(3);
    first.release(1);
    await waiting;
    expect(second.heldCount).toBe(1);
    second.release(2);
  });

  it('creates its directory 0700 and records who holds an exclusive resource', async () => {
    const dir = lockDir();
    const locks = locksOn(dir);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    await locks.acquire(7, normalizeResources(['port:9']), { label: 'a job', job: 3 });
    const files = fs.readdirSync(dir);
    expect(files).toHaveLength(1);
    const record = JSON.parse(fs.readFileSync(path.join(dir, files[0]!), 'utf8'));
    expect(record).toMatchObject({ v: 2, resource: 'port:9', mode: 'exclusive', pid: process.pid, start: processStartTime(process.pid), owner: 'a job', job: 3 });
    locks.release(7);
  });
});

describe('a lock wait is woken by the holder’s release (the lock directory changes), not only by its poll', () => {
  /** A poll that never comes during a test: only the directory watch (or a cancel) ends the wait. */
  const NO_POLL = { minMs: 600_000, maxMs: 600_000 };
  const settledWithin = (promise: Promise<unknown>, ms: number) =>
    Promise.race([promise.then(() => true, () => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);

  /** A resource the holder has and the waiter (its poll out of the way) asks for. */
  async function heldElsewhere(onDirectoryChange: boolean) {
    const dir = lockDir();
    const holder = locksOn(dir);
    const waiter = new KernelLocks(openedLockDir(dir), { cgroupParent: null }, null, { ...NO_POLL, onDirectoryChange });
    const resources = normalizeResources([parse('port:5173')]);
    await holder.acquire(1, resources, OWNER);
    return { holder, waiter, resources, waiting: waiter.acquire(2, resources, OWNER) };
  }

  it('hands over at the release, with the poll out of the way', async () => {
    const { holder, waiter, resources, waiting } = await heldElsewhere(true);
    expect(await settledWithin(waiting, 100)).toBe(false); // it waits while the lock is held
    holder.release(1);
    expect(await settledWithin(waiting, 10_000)).toBe(true);
    await waiting; // and it holds the resource now
    expect(holder.tryAcquire(3, resources, OWNER)).toBe(false);
    waiter.release(2);
  });

  it('the control: without the watch the same release goes unseen until the poll, and a cancel ends the wait at once', async () => {
    const { holder, waiter, waiting } = await heldElsewhere(false);
    holder.release(1);
    expect(await settledWithin(waiting, 300)).toBe(false);
    waiter.cancel(2);
    await expect(waiting).rejects.toThrow('lock request 2 was cancelled');
  });
});
