/**
 * Holder records (supervisor/locks/records.ts, issue 12 items 1, 2 and 12): they name the holder by
 * its supervisor instance, are cleared on release (an exclusive holder truncates, a sharer removes
 * its own line), are read as untrusted input (bounded, validated), and a dead-holder check that
 * fails releases the locks it had just taken.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { normalizeResources } from '../../src/locks/index.js';
import { lockFileName } from '../../supervisor/locks/kernel-locks.js';
import { locksOn, scratchDir } from '../helpers/lock-dirs.js';
import { waitUntil } from '../helpers/kernel.js';
import { formatRecord, MAX_RECORD_BYTES, parseRecord, readRecords, type HolderRecord } from '../../supervisor/locks/records.js';
import { bootId, ownIdentity } from '../../supervisor/identity.js';
import { markerPrefix, subtreeName } from '../../supervisor/names.js';
import { BOUNDED } from '../helpers/bounded.js';

function scratch(): string {
  return scratchDir('heph-records-');
}

const OWNER = { label: 'test', job: null };

function fileOf(dir: string, resource: string): string {
  return path.join(dir, lockFileName(resource));
}

function recordsIn(dir: string, resource: string): HolderRecord[] {
  const fd = fs.openSync(fileOf(dir, resource), 'r');
  try {
    return readRecords(fd, resource, 'exclusive');
  } finally {
    fs.closeSync(fd);
  }
}

/** An instance that ran on this boot and is gone: a pid no process has now, with a start time. */
function deadInstance() {
  return { pid: spawnSync('true', BOUNDED).pid!, start: '4242', boot: bootId() };
}

function record(overrides: Partial<HolderRecord> = {}): HolderRecord {
  return { resource: 'port:1', mode: 'exclusive', holder: ownIdentity(), token: '0123456789abcdef', owner: 'x', job: null, since: 1, ...overrides };
}

describe('holder records', () => {
  it('name the holder instance, and an exclusive holder\'s record goes when it releases', async () => {
    const dir = scratch();
    const locks = locksOn(dir);
    await locks.acquire(1, normalizeResources(['port:1']), { label: 'job 3', job: 3 });
    expect(recordsIn(dir, 'port:1')).toEqual([expect.objectContaining({ mode: 'exclusive', holder: ownIdentity(), owner: 'job 3', job: 3 })]);
    // Its record goes with the release; used by no one else, the file too (issue 28, item 6).
    locks.release(1);
    expect(fs.existsSync(fileOf(dir, 'port:1'))).toBe(false);
  });

  it('a sharer removes only its own line when it releases', async () => {
    const dir = scratch();
    const first = locksOn(dir);
    const second = locksOn(dir);
    await first.acquire(1, normalizeResources([{ resource: 'path:/repo', mode: 'shared' }]), { label: 'first', job: null });
    await second.acquire(2, normalizeResources([{ resource: 'path:/repo', mode: 'shared' }]), { label: 'second', job: null });
    expect(recordsIn(dir, 'path:/repo').map((r) => r.owner).sort()).toEqual(['first', 'second']);
    first.release(1);
    expect(recordsIn(dir, 'path:/repo').map((r) => r.owner)).toEqual(['second']);
    second.release(2);
    expect(fs.existsSync(fileOf(dir, 'path:/repo'))).toBe(false);
  });

  it('a later taker finds no record of a holder that released, and a sharer drops dead sharers\' lines once it has cleaned up after them', async () => {
    const dir = scratch();
    const locks = locksOn(dir);
    await locks.acquire(1, normalizeResources(['port:1']), OWNER);
    locks.release(1);
    await locks.acquire(2, normalizeResources(['port:1']), OWNER);
    expect(recordsIn(dir, 'port:1')).toEqual([expect.objectContaining({ holder: ownIdentity() })]);
    locks.release(2);
    // A dead sharer's line (its process and runtime gone: nothing left to clean up in this test).
    fs.writeFileSync(fileOf(dir, 'path:/repo'), formatRecord(record({ resource: 'path:/repo', mode: 'shared', holder: deadInstance() })));
    await locks.acquire(3, normalizeResources([{ resource: 'path:/repo', mode: 'shared' }]), OWNER);
    expect(recordsIn(dir, 'path:/repo').map((r) => r.holder)).toEqual([ownIdentity()]);
    locks.release(3);
  });

  it('are untrusted input: only well-formed lines about this resource, of bounded length, count', () => {
    const good = formatRecord(record()).trimEnd();
    expect(parseRecord(good, 'port:1')).toEqual(record());
    expect(parseRecord(good, 'port:2')).toBeNull();
    const bad: Record<string, unknown>[] = [
      { pid: 'x' },
      { pid: 0 },
      { pid: 2 ** 40 },
      { start: '01' },
      { start: '1 2' },
      { boot: 'not-a-uuid' },
      { boot: undefined },
      { mode: 'both' },
      { token: '../etc' },
      { job: -1 },
      { job: 1.5 },
      { owner: 'x'.repeat(201) },
      { since: 'now' },
      { v: 1 },
    ];
    const base = JSON.parse(good) as Record<string, unknown>;
    for (const change of bad) expect(parseRecord(JSON.stringify({ ...base, ...change }), 'port:1')).toBeNull();
    expect(parseRecord('[1,2]', 'port:1')).toBeNull();
    expect(parseRecord('{"v":2', 'port:1')).toBeNull();
    expect(parseRecord(JSON.stringify({ ...base, owner: 'y'.repeat(3000) }), 'port:1')).toBeNull();
  });

  it('reads at most MAX_RECORD_BYTES of a file, whatever its size', () => {
    const dir = scratch();
    const file = path.join(dir, 'f');
    const line = formatRecord(record());
    // A record beyond the bound is never read; one before it is.
    fs.writeFileSync(file, `${line}${'x'.repeat(MAX_RECORD_BYTES)}\n${line}`);
    const fd = fs.openSync(file, 'r');
    try {
      expect(readRecords(fd, 'port:1', 'exclusive')).toEqual([record()]);
    } finally {
      fs.closeSync(fd);
    }
    fs.writeFileSync(file, `${'x'.repeat(MAX_RECORD_BYTES)}\n${line}`);
    const fd2 = fs.openSync(file, 'r');
    try {
      expect(readRecords(fd2, 'port:1', 'exclusive')).toEqual([]);
    } finally {
      fs.closeSync(fd2);
    }
  });

  it('a lease released while its dead-holder check runs is dropped once: descriptors opened since are not touched', async () => {
    const dir = scratch();
    const dead = deadInstance();
    // A stand-in for the dead instance's cgroup subtree that reads as populated, so its cleanup
    // keeps going round until we let it end.
    const parent = scratch();
    const subtree = path.join(parent, subtreeName(dead));
    fs.mkdirSync(subtree);
    fs.writeFileSync(path.join(subtree, 'cgroup.events'), 'populated 1\n');
    fs.writeFileSync(path.join(subtree, 'cgroup.kill'), '');
    fs.writeFileSync(fileOf(dir, 'port:1'), formatRecord(record({ holder: dead })));
    const locks = locksOn(dir, { cgroupParent: parent });
    const acquiring = locks.acquire(1, normalizeResources(['port:1']), OWNER);
    const outcome = acquiring.then(
      () => null,
      (error: Error) => error,
    );
    await waitUntil(() => fs.readFileSync(path.join(subtree, 'cgroup.kill'), 'latin1') === '1', 'the cleanup to start');
    locks.release(1);
    // The released lease's descriptor numbers are free again: a lock taken now may get them.
    const other = locksOn(dir);
    expect(other.tryAcquire(2, normalizeResources(['port:2']), OWNER)).toBe(true);
    fs.writeFileSync(path.join(subtree, 'cgroup.events'), 'populated 0\n');
    const error = await outcome;
    expect(error).toBeInstanceOf(Error);
    expect((error as NodeJS.ErrnoException).code).not.toBe('EBADF');
    expect(locks.heldCount).toBe(0);
    // port:2 is still locked by `other` (nothing unlocked or closed its descriptors), port:1 is free.
    const third = locksOn(dir);
    expect(third.tryAcquire(3, normalizeResources(['port:2']), OWNER)).toBe(false);
    expect(third.tryAcquire(4, normalizeResources(['port:1']), OWNER)).toBe(true);
    third.release(4);
    other.release(2);
  });

  it('a dead-holder check that fails releases the locks it took (and the check that succeeds keeps them)', async () => {
    const dir = scratch();
    const dead = deadInstance();
    // The dead instance's "subtree" under a cgroup parent of the test's: cgroup.events is a
    // directory, so reading it fails and the cleanup throws.
    const parent = scratch();
    fs.mkdirSync(path.join(parent, subtreeName(dead), 'cgroup.events'), { recursive: true });
    fs.writeFileSync(fileOf(dir, 'port:1'), formatRecord(record({ holder: dead })));
    const failing = locksOn(dir, { cgroupParent: parent });
    await expect(failing.acquire(1, normalizeResources(['port:1']), OWNER)).rejects.toThrow(/EISDIR|read/);
    expect(failing.heldCount).toBe(0);
    const other = locksOn(dir);
    expect(other.tryAcquire(2, normalizeResources(['port:1']), OWNER)).toBe(true);
    other.release(2);
    // Control: the same record with a cleanup that can run: the locks stay held.
    fs.writeFileSync(fileOf(dir, 'port:1'), formatRecord(record({ holder: dead })));
    const working = locksOn(dir);
    await working.acquire(3, normalizeResources(['port:1']), OWNER);
    expect(working.heldCount).toBe(1);
    expect(other.tryAcquire(4, normalizeResources(['port:1']), OWNER)).toBe(false);
    working.release(3);
  });
});

describe('holder records after an adoption', () => {
  it('a lease adopted from a dead supervisor keeps naming it, so a later taker also stops what that one left', async () => {
    const dir = scratch();
    // Supervisor A died holding port:9 with a job process left; supervisor B adopted the lease and
    // died too. The record must still lead the next taker to A's leftover.
    const first = deadInstance();
    const second = { ...deadInstance(), start: '4343' };
    const leftover = spawn('sleep', ['1000'], { env: { PATH: process.env.PATH, HEPH_JOB: `${markerPrefix(first).slice('HEPH_JOB='.length)}0` }, stdio: 'ignore' });
    try {
      await waitUntil(() => fs.existsSync(`/proc/${leftover.pid}/environ`) && fs.readFileSync(`/proc/${leftover.pid}/environ`, 'latin1').includes(markerPrefix(first)), 'the leftover to carry its marker');
      fs.writeFileSync(fileOf(dir, 'port:9'), formatRecord(record({ resource: 'port:9', holder: second, predecessors: [first] })));
      const locks = locksOn(dir);
      await locks.acquire(1, normalizeResources(['port:9']), OWNER);
      await waitUntil(() => !fs.existsSync(`/proc/${leftover.pid}`) || /\) [ZX] /.test(fs.readFileSync(`/proc/${leftover.pid}/stat`, 'latin1')), 'the leftover of the first dead holder stopped');
      locks.release(1);
    } finally {
      leftover.kill('SIGKILL');
    }
  });

  it('predecessors survive the record format, and a malformed one is no record', () => {
    const first = deadInstance();
    const line = formatRecord(record({ predecessors: [first] })).trim();
    expect(parseRecord(line, 'port:1')?.predecessors).toEqual([first]);
    expect(parseRecord(line.replace(`"pid":${first.pid},"start"`, '"pid":-1,"start"'), 'port:1')).toBeNull();
  });
});
