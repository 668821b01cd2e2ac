/**
 * The lock directory's walk (supervisor/locks/lock-dir.ts): each level made or checked by us,
 * symlinks followed only when root or we own them, nothing chmodded, a private directory (removed
 * again at close) when the one asked for is not safe. Levels owned by another user are made here
 * with chown, so the parts that need one run as root only; test/hardening/lock-dir-attacks.test.ts
 * plays the other user for real.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openLockDirectory, walkLockDir, UnsafeLockDirError, type LockDirectory } from '../../supervisor/locks/lock-dir.js';
import { openedLockDir, scratchDir } from '../helpers/lock-dirs.js';
import { native } from '../../supervisor/native.js';

const uid = process.getuid!();
const asRoot = uid === 0;
/** An owner that is neither root nor us (root can chown to any number). */
const STRANGER = 54_321;

function scratch(): string {
  return scratchDir('heph-lockdir-');
}

const open = openedLockDir;

/** The problem the walk reports for `dir`, or null when it opens. */
function problemOf(dir: string) {
  try {
    const { fd, parent } = walkLockDir(dir, uid);
    native.closeFd(fd);
    native.closeFd(parent);
    return null;
  } catch (error) {
    if (error instanceof UnsafeLockDirError) return error.problem;
    throw error;
  }
}

/** A lock file made through the directory's descriptor lands where the descriptor points. */
function touch(lockDir: LockDirectory, name: string): void {
  native.closeFd(native.lockOpenAt(lockDir.fd, name));
}

describe('the lock directory walk', () => {
  it('makes every missing level 0700 itself and uses the directory it asked for', () => {
    const base = scratch();
    const dir = path.join(base, 'a', 'b', 'locks');
    const lockDir = open(dir);
    expect(lockDir.info).toEqual({ dir, refused: null });
    for (const level of ['a', 'a/b', 'a/b/locks']) expect(fs.lstatSync(path.join(base, level)).mode & 0o7777).toBe(0o700);
    touch(lockDir, 'x.lock');
    expect(fs.readdirSync(dir)).toEqual(['x.lock']);
  });

  it('follows a symlink of its own, relative or absolute, and checks where it leads', () => {
    const base = scratch();
    fs.mkdirSync(path.join(base, 'real', 'locks'), { recursive: true, mode: 0o700 });
    fs.symlinkSync('real', path.join(base, 'relative'));
    fs.symlinkSync(path.join(base, 'real'), path.join(base, 'absolute'));
    for (const via of ['relative', 'absolute']) {
      const lockDir = open(path.join(base, via, 'locks'));
      expect(lockDir.info.refused).toBeNull();
      touch(lockDir, `${via}.lock`);
    }
    expect(fs.readdirSync(path.join(base, 'real', 'locks')).sort()).toEqual(['absolute.lock', 'relative.lock']);
  });

  it('refuses a symlink loop', () => {
    const base = scratch();
    fs.symlinkSync('b', path.join(base, 'a'));
    fs.symlinkSync('a', path.join(base, 'b'));
    expect(problemOf(path.join(base, 'a', 'locks'))).toMatchObject({ reason: 'loop' });
  });

  it('refuses a lock directory that grants others access, and changes nothing about it', () => {
    const base = scratch();
    const dir = path.join(base, 'locks');
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o755);
    expect(problemOf(dir)).toEqual({ level: dir, reason: 'access', mode: 0o755 });
    const lockDir = open(dir);
    expect(lockDir.info.refused).toEqual({ dir, problem: { level: dir, reason: 'access', mode: 0o755 } });
    expect(fs.statSync(dir).mode & 0o7777).toBe(0o755);
    touch(lockDir, 'x.lock');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('refuses a level others may write to unless it is sticky', () => {
    const base = scratch();
    const open777 = path.join(base, 'open');
    fs.mkdirSync(open777);
    fs.chmodSync(open777, 0o777);
    expect(problemOf(path.join(open777, 'locks'))).toEqual({ level: open777, reason: 'writable', mode: 0o777 });
    fs.chmodSync(open777, 0o1777);
    expect(problemOf(path.join(open777, 'locks'))).toBeNull();
  });

  it('refuses a file where a level should be', () => {
    const base = scratch();
    fs.writeFileSync(path.join(base, 'file'), '');
    expect(problemOf(path.join(base, 'file', 'locks'))).toMatchObject({ level: path.join(base, 'file'), reason: 'not-directory' });
  });

  it.skipIf(!asRoot)("refuses a level, a symlink or a lock directory owned by another user, and touches none of them", () => {
    const base = scratch();
    fs.chmodSync(base, 0o1777);
    // A directory of the stranger's.
    const theirs = path.join(base, 'theirs');
    fs.mkdirSync(theirs, { mode: 0o700 });
    fs.chownSync(theirs, STRANGER, STRANGER);
    expect(problemOf(path.join(theirs, 'locks'))).toEqual({ level: theirs, reason: 'owner', uid: STRANGER });
    expect(fs.readdirSync(theirs)).toEqual([]);
    // A symlink of the stranger's to a directory of ours.
    const ours = path.join(base, 'ours');
    fs.mkdirSync(ours, { mode: 0o700 });
    const link = path.join(base, 'link');
    fs.symlinkSync(ours, link);
    fs.lchownSync(link, STRANGER, STRANGER);
    expect(problemOf(path.join(link))).toEqual({ level: link, reason: 'symlink', uid: STRANGER });
    // A lock directory of the stranger's at the end of a path of ours.
    const leaf = path.join(ours, 'locks');
    fs.mkdirSync(leaf, { mode: 0o700 });
    fs.chownSync(leaf, STRANGER, STRANGER);
    expect(problemOf(leaf)).toEqual({ level: leaf, reason: 'owner', uid: STRANGER });
    // A private directory is used instead, and removed at close with what was put in it.
    const lockDir = openLockDirectory(path.join(theirs, 'locks'));
    expect(lockDir.info.refused?.problem).toEqual({ level: theirs, reason: 'owner', uid: STRANGER });
    expect(path.dirname(lockDir.info.dir)).toBe(os.tmpdir());
    expect(fs.lstatSync(lockDir.info.dir)).toMatchObject({ uid });
    expect(fs.lstatSync(lockDir.info.dir).mode & 0o7777).toBe(0o700);
    touch(lockDir, 'x.lock');
    expect(fs.readdirSync(lockDir.info.dir)).toEqual(['x.lock']);
    lockDir.close();
    expect(fs.existsSync(lockDir.info.dir)).toBe(false);
    expect(fs.statSync(theirs).mode & 0o7777).toBe(0o700);
  });

  it('throws when not even a private directory is safe, and leaves none behind', () => {
    const unsafeTmp = path.join(scratch(), 'tmp');
    fs.mkdirSync(unsafeTmp);
    fs.chmodSync(unsafeTmp, 0o777);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = unsafeTmp;
    try {
      expect(() => openLockDirectory(path.join(unsafeTmp, 'heph', 'locks'))).toThrow(/neither is a private one/);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    expect(fs.readdirSync(unsafeTmp)).toEqual([]);
  });

  it('keeps using the directory it opened when the path is swapped afterwards', () => {
    const base = scratch();
    const dir = path.join(base, 'locks');
    const lockDir = open(dir);
    fs.renameSync(dir, path.join(base, 'moved'));
    fs.mkdirSync(dir, { mode: 0o700 });
    touch(lockDir, 'x.lock');
    expect(fs.readdirSync(path.join(base, 'moved'))).toEqual(['x.lock']);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
