/**
 * For tests that drive the addon in their own worker: the addon's reaper started there, its
 * reports kept by token, and spawn options with the defaults those tests share. The worker must
 * have no children of its own (the reaper waits for any child), and can start none through
 * child_process afterwards: the reaper would reap them from under libuv, so those calls throw.
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { native, type NativeSpawnOptions, type ReapedChild } from '../../supervisor/native.js';

const CHILD_PROCESS_CALLS = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

/**
 * Once the reaper runs, a child_process child is reaped from under libuv: its spawnSync never
 * returns (the worker hangs, its timers with it). Every such call throws instead, naming why.
 */
function refuseChildProcess(): void {
  const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, unknown>;
  for (const name of CHILD_PROCESS_CALLS) {
    childProcess[name] = () => {
      throw new Error(`child_process.${name} after startReaper: the addon's reaper would reap its child from under libuv; run it in a file without the reaper`);
    };
  }
  syncBuiltinESMExports();
}

export function addonReaper() {
  const reports = new Map<number, ReapedChild>();
  const waiters = new Map<number, (child: ReapedChild) => void>();

  /** The reaper's report for `token`; the deadline only turns a hang into a failure. */
  function reaped(token: number, timeoutMs = 10_000): Promise<ReapedChild> {
    const report = reports.get(token);
    if (report) return Promise.resolve(report);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(token);
        reject(new Error(`the reaper reported no exit for token ${token} within ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.set(token, (child) => {
        clearTimeout(timer);
        resolve(child);
      });
    });
  }

  function startReports(): void {
    refuseChildProcess();
    native.startReaper((child) => {
      reports.set(child.token, child);
      waiters.get(child.token)?.(child);
      waiters.delete(child.token);
    });
  }

  return { reports, reaped, startReports };
}

/** Spawn options: /bin/sh in /, a minimal PATH, no cgroup, stdin /dev/null, merged output, a fresh token. */
export function spawnOptionsFrom(defaults: Partial<NativeSpawnOptions> = {}, firstToken = 1) {
  let nextToken = firstToken;
  return (overrides: Partial<NativeSpawnOptions> = {}): NativeSpawnOptions => ({
    shell: '/bin/sh',
    command: 'exec sleep 60',
    cwd: '/',
    env: ['PATH=/usr/bin:/bin'],
    cgroup: null,
    stdin: 'null',
    merge: true,
    token: nextToken++,
    forceFork: false,
    ...defaults,
    ...overrides,
  });
}
