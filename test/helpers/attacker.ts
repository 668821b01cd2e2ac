/**
 * Another local user, for tests that play the attacker of a shared directory (issue 12, item 1):
 * a throwaway unprivileged account made with useradd, commands run as it through setpriv (its uid,
 * its gid, no supplementary groups), and a "tmp" of our own that behaves like /tmp (root's, mode
 * 1777) so nothing planted there can reach another test's files. Needs root; `attackerUnavailable`
 * says why not otherwise.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { BOUNDED } from './bounded.js';

function probe(): string | null {
  if (process.getuid?.() !== 0) return 'the attacker tests need root (to create a user)';
  for (const tool of ['useradd', 'userdel', 'setpriv']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { ...BOUNDED, stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  return null;
}

export const attackerUnavailable = probe();

export class Attacker {
  readonly name = `heph-atk-${crypto.randomBytes(3).toString('hex')}`;
  readonly uid: number;
  readonly gid: number;
  private readonly started = new Set<ChildProcess>();

  constructor() {
    // A system account: no home, no login shell, no mail spool to clean up afterwards.
    execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', this.name], { ...BOUNDED, stdio: 'pipe' });
    this.uid = Number(execFileSync('id', ['-u', this.name], { ...BOUNDED, encoding: 'utf8' }).trim());
    this.gid = Number(execFileSync('id', ['-g', this.name], { ...BOUNDED, encoding: 'utf8' }).trim());
  }

  private argv(command: string): string[] {
    return ['--reuid', String(this.uid), '--regid', String(this.gid), '--clear-groups', '/bin/sh', '-c', command];
  }

  /** Runs a shell command as the attacker and returns its stdout (throws on a non-zero exit). */
  run(command: string): string {
    return execFileSync('setpriv', this.argv(command), { ...BOUNDED, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /** Starts a long-running shell command as the attacker; stopped by `dispose`. */
  start(command: string): ChildProcess {
    const child = spawn('setpriv', this.argv(command), { stdio: 'ignore' });
    this.started.add(child);
    child.once('exit', () => this.started.delete(child));
    return child;
  }

  /** Stops what `start` started (by the pids we were given), then removes the account. */
  async dispose(): Promise<void> {
    await Promise.all(
      [...this.started].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      ),
    );
    execFileSync('userdel', [this.name], { ...BOUNDED, stdio: 'pipe' });
  }
}

/**
 * A directory that stands in for /tmp: owned by root, mode 1777 (anyone may create entries, only
 * an entry's owner may rename or remove it). A runtime started with TMPDIR pointing here and no
 * XDG_RUNTIME_DIR makes its default lock directory <here>/heph-jobs-<uid>/locks.
 */
export function sharedTmp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-sharedtmp-'));
  fs.chmodSync(dir, 0o1777);
  return dir;
}

/** Mode, owner and the sorted entries of a directory, to compare before and after an attack. */
export function snapshot(dir: string): { mode: number; uid: number; entries: string[] } {
  const stat = fs.lstatSync(dir);
  return { mode: stat.mode & 0o7777, uid: stat.uid, entries: fs.readdirSync(dir).sort() };
}

/**
 * An unprivileged user for the tests of one describe block, with a home of its own under the
 * shared tmp (`label` names it): made before them, removed with everything it ran after them.
 */
export function attackerForSuite(label: string): { user: () => Attacker; home: () => string } {
  let user: Attacker | undefined;
  let home: string | undefined;
  beforeAll(() => {
    user = new Attacker();
    home = fs.mkdtempSync(path.join(os.tmpdir(), `heph-test-${label}-`));
    fs.chownSync(home, user.uid, user.gid);
  });
  afterAll(async () => {
    await user?.dispose();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });
  return { user: () => user!, home: () => home! };
}
