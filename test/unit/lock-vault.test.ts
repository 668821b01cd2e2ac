/**
 * The lock vault (supervisor/locks/vault.ts) in one process: what a supervisor stores survives the
 * closing of every descriptor it had (as at its death), as long as the carrier's other end is
 * open; a later one adopts it from the carrier, leases spanning several messages included; a
 * released lease's copies lock nothing; and the locks go when the carrier does. Kernel truth: an
 * OFD lock attempt through another open file description.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LockVault, type VaultLease } from '../../supervisor/locks/vault.js';
import { native } from '../../supervisor/native.js';

const dirs: string[] = [];
const open: number[] = [];
afterEach(() => {
  for (const fd of open.splice(0)) native.closeFd(fd);
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function lockDir(): number {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-vault-'));
  dirs.push(dir);
  const fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  open.push(fd);
  return fd;
}

/** A lease of `count` lock files, each write-locked on byte 0 through its own description. */
function lease(dirfd: number, id: number, count = 1): VaultLease {
  const files = Array.from({ length: count }, (_, i) => `lease-${id}-${i}.lock`);
  const fds = files.map((file) => {
    const fd = native.lockOpenAt(dirfd, file);
    expect(native.lockRange(fd, true, 0, 1)).toBe(true);
    return fd;
  });
  return { lease: id, files, fds, meta: { note: `lease ${id}` } };
}

/** Whether another open file description could lock `file` now (the probe lets go at once). */
function lockable(dirfd: number, file: string): boolean {
  const fd = native.lockOpenAt(dirfd, file);
  try {
    return native.lockRange(fd, true, 0, 1);
  } finally {
    native.closeFd(fd);
  }
}

function closeLease(held: VaultLease): void {
  for (const fd of held.fds) native.closeFd(fd);
}

describe('the lock vault', () => {
  it('keeps stored locks after every descriptor of their holder is closed, hands them to an adopter, and drops them with the carrier', () => {
    const dirfd = lockDir();
    const [peer, carrier] = native.seqpacketPair();
    const vault = LockVault.create(peer);
    const leases = [lease(dirfd, 1), lease(dirfd, 2, 3)];
    expect(vault.store(leases)).toBe(true);
    // The holder dies: its descriptors, its vault sockets and its end of the carrier close.
    for (const held of leases) closeLease(held);
    vault.close();
    native.closeFd(peer);
    expect(lockable(dirfd, 'lease-1-0.lock')).toBe(false);
    expect(lockable(dirfd, 'lease-2-2.lock')).toBe(false);
    // A fresh holder inherits from the carrier (which keeps the vault for the next one too).
    const heir = LockVault.inherit(carrier)!;
    const adopted = heir.adopt().sort((a, b) => a.lease - b.lease);
    expect(adopted.map(({ lease: id, files, meta }) => ({ id, files, meta }))).toEqual([
      { id: 1, files: ['lease-1-0.lock'], meta: { note: 'lease 1' } },
      { id: 2, files: ['lease-2-0.lock', 'lease-2-1.lock', 'lease-2-2.lock'], meta: { note: 'lease 2' } },
    ]);
    expect(adopted[1]!.fds).toHaveLength(3);
    // It dies too, and a third one adopts the same again.
    for (const held of adopted) closeLease(held);
    heir.close();
    expect(lockable(dirfd, 'lease-2-0.lock')).toBe(false);
    const third = LockVault.inherit(carrier)!;
    const again = third.adopt();
    expect(again.map((held) => held.lease).sort()).toEqual([1, 2]);
    // Released through its description: every copy is unlocked, queued or not.
    for (const fd of again.find((held) => held.lease === 1)!.fds) native.unlockRange(fd, 0, 0);
    expect(lockable(dirfd, 'lease-1-0.lock')).toBe(true);
    expect(lockable(dirfd, 'lease-2-0.lock')).toBe(false);
    for (const held of again) closeLease(held);
    third.close();
    // The carrier goes (the runtime ends): the vault with it, and the locks.
    native.closeFd(carrier);
    expect(lockable(dirfd, 'lease-2-0.lock')).toBe(true);
  });

  it('negative control: without the vault, closing the holder\'s descriptors drops its locks', () => {
    const dirfd = lockDir();
    const held = lease(dirfd, 1);
    expect(lockable(dirfd, 'lease-1-0.lock')).toBe(false);
    closeLease(held);
    expect(lockable(dirfd, 'lease-1-0.lock')).toBe(true);
  });

  it('a new snapshot replaces the old one: a lease left out is no longer kept', () => {
    const dirfd = lockDir();
    const [peer, carrier] = native.seqpacketPair();
    open.push(carrier);
    const vault = LockVault.create(peer);
    native.closeFd(peer);
    const first = lease(dirfd, 1);
    const second = lease(dirfd, 2);
    expect(vault.store([first, second])).toBe(true);
    expect(vault.store([second])).toBe(true);
    closeLease(first);
    closeLease(second);
    vault.close();
    expect(lockable(dirfd, 'lease-1-0.lock')).toBe(true);
    expect(lockable(dirfd, 'lease-2-0.lock')).toBe(false);
    const heir = LockVault.inherit(carrier)!;
    const adopted = heir.adopt();
    expect(adopted.map((held) => held.lease)).toEqual([2]);
    for (const held of adopted) closeLease(held);
    heir.close();
  });

  it('carries many leases and a lease of more descriptors than one message may hold', () => {
    const dirfd = lockDir();
    const [peer, carrier] = native.seqpacketPair();
    open.push(carrier);
    const vault = LockVault.create(peer);
    native.closeFd(peer);
    const leases = [lease(dirfd, 1, 300), ...Array.from({ length: 200 }, (_, i) => lease(dirfd, i + 2))];
    expect(vault.store(leases)).toBe(true);
    for (const held of leases) closeLease(held);
    vault.close();
    const heir = LockVault.inherit(carrier)!;
    const adopted = heir.adopt();
    expect(adopted).toHaveLength(201);
    const big = adopted.find((held) => held.lease === 1)!;
    expect(big.files).toEqual(leases[0]!.files);
    expect(big.fds).toHaveLength(300);
    expect(lockable(dirfd, 'lease-1-299.lock')).toBe(false);
    for (const held of adopted) closeLease(held);
    heir.close();
  });

  it('carries one lease of 1000 descriptors with notes for each, adopted whole (issue 28, item 7)', () => {
    const dirfd = lockDir();
    const [peer, carrier] = native.seqpacketPair();
    open.push(carrier);
    const vault = LockVault.create(peer);
    native.closeFd(peer);
    const big = lease(dirfd, 1, 1000);
    // As a lease of 1000 resources' notes are: one entry per resource.
    big.meta = { own: big.files.map((file, index) => ({ index, resource: `worktree:${file}`, mode: 'exclusive' })), note: 'big' };
    expect(vault.store([big, lease(dirfd, 2)])).toBe(true);
    closeLease(big);
    vault.close();
    const heir = LockVault.inherit(carrier)!;
    const adopted = heir.adopt().sort((a, b) => a.lease - b.lease);
    expect(adopted.map((held) => held.lease)).toEqual([1, 2]);
    expect(adopted[0]!.files).toEqual(big.files);
    expect(adopted[0]!.fds).toHaveLength(1000);
    expect(adopted[0]!.meta).toEqual(big.meta);
    expect(lockable(dirfd, 'lease-1-999.lock')).toBe(false);
    for (const held of adopted) closeLease(held);
    heir.close();
  });

  it('past its capacity a store is refused whole, and the snapshot before it still stands, through an adoption too', () => {
    const dirfd = lockDir();
    const [peer, carrier] = native.seqpacketPair();
    open.push(carrier);
    const vault = LockVault.create(peer);
    native.closeFd(peer);
    // Leases with bulky notes, added one by one until the vault says no (64 MiB of notes at most).
    const kept: VaultLease[] = [];
    let refused: VaultLease | null = null;
    for (let id = 1; id <= 1024 && refused === null; id++) {
      const next = lease(dirfd, id, 4);
      next.meta = { note: 'x'.repeat(64 * 1024) };
      if (vault.store([...kept, next])) kept.push(next);
      else refused = next;
    }
    expect(refused).not.toBeNull();
    expect(kept.length).toBeGreaterThan(0);
    // What was kept survives its holder, an adoption, and the adopter's death.
    for (const held of [...kept, refused!]) closeLease(held);
    vault.close();
    expect(lockable(dirfd, `lease-${refused!.lease}-0.lock`)).toBe(true);
    const heir = LockVault.inherit(carrier)!;
    const adopted = heir.adopt();
    expect(adopted.map((held) => held.lease).sort((a, b) => a - b)).toEqual(kept.map((held) => held.lease));
    for (const held of adopted) closeLease(held);
    heir.close();
    expect(kept.every((held) => !lockable(dirfd, held.files[3]!))).toBe(true);
    const third = LockVault.inherit(carrier)!;
    const again = third.adopt();
    expect(again).toHaveLength(kept.length);
    for (const held of again) closeLease(held);
    third.close();
  });

  it('adoptions cut short by a crash leave every lease whole for the next one, its slices in whatever order', () => {
    const dirfd = lockDir();
    const [peer, carrier] = native.seqpacketPair();
    open.push(carrier);
    const vault = LockVault.create(peer);
    native.closeFd(peer);
    // Three messages of descriptors, and notes that span messages too.
    const big = lease(dirfd, 1, 600);
    big.meta = { own: big.files.map((file, index) => ({ index, resource: `worktree:${file}`, mode: 'exclusive' })) };
    const small = lease(dirfd, 2);
    expect(vault.store([big, small])).toBe(true);
    closeLease(big);
    closeLease(small);
    vault.close();
    // Two adopters die part way through, one copy behind each: the slices are now out of order.
    for (const afterCopies of [1, 1]) {
      const dying = LockVault.inherit(carrier)!;
      expect(() => dying.adopt({ afterCopies })).toThrow(/cut short/);
      dying.close();
      expect(['lease-1-0.lock', 'lease-1-599.lock', 'lease-2-0.lock'].filter((file) => lockable(dirfd, file))).toEqual([]);
    }
    const heir = LockVault.inherit(carrier)!;
    const adopted = heir.adopt().sort((a, b) => a.lease - b.lease);
    expect(adopted.map((held) => held.lease)).toEqual([1, 2]);
    expect(adopted[0]!.files).toEqual(big.files);
    expect(adopted[0]!.meta).toEqual(big.meta);
    // Each descriptor is in its place: unlocking the last one frees exactly the last file.
    native.unlockRange(adopted[0]!.fds[599]!, 0, 0);
    expect([lockable(dirfd, 'lease-1-599.lock'), lockable(dirfd, 'lease-1-598.lock')]).toEqual([true, false]);
    for (const held of adopted) closeLease(held);
    heir.close();
    const third = LockVault.inherit(carrier)!;
    const again = third.adopt();
    expect(again.map((held) => held.lease).sort()).toEqual([1, 2]);
    for (const held of again) closeLease(held);
    third.close();
  });

  it('a carrier with nothing in it, or something else, holds no vault', () => {
    const [peer, carrier] = native.seqpacketPair();
    open.push(peer, carrier);
    expect(LockVault.inherit(carrier)).toBeNull();
    const dirfd = lockDir();
    const stray = native.lockOpenAt(dirfd, 'stray');
    native.sendFds(peer, Buffer.from('not a vault'), [stray]);
    native.closeFd(stray);
    expect(LockVault.inherit(carrier)).toBeNull();
  });
});
