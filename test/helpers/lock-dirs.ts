/**
 * Scratch directories and opened lock directories for tests of the supervisor's lock modules
 * (supervisor/locks/), closed and removed after each test.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { KernelLocks } from '../../supervisor/locks/kernel-locks.js';
import { openLockDirectory, type LockDirectory } from '../../supervisor/locks/lock-dir.js';
import type { CleanupScope } from '../../supervisor/cleanup/lost-cleanup.js';

const dirs: string[] = [];
const opened: LockDirectory[] = [];

afterEach(() => {
  for (const dir of opened.splice(0)) dir.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh 0700 directory under the tmpdir, removed after the test. */
export function scratchDir(prefix = 'heph-locks-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** `dir` opened as the supervisor opens its lock directory, closed after the test. */
export function openedLockDir(dir: string): LockDirectory {
  const lockDir = openLockDirectory(dir);
  opened.push(lockDir);
  return lockDir;
}

/** Locks on `dir` as one supervisor holds them (each opens the directory itself). */
export function locksOn(dir: string, scope: CleanupScope = { cgroupParent: null }): KernelLocks {
  return new KernelLocks(openedLockDir(dir), scope);
}
