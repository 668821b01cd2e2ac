/**
 * The addon calls that must run in a fresh Node: closeInheritedFds closes what that process
 * inherited, and the queue's callbacks are tested before and after startReaper. Each runs as a
 * child of this worker, which has no reaper of its own (the addon's would reap them from libuv).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BOUNDED } from '../helpers/bounded.js';

const nativeModule = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/supervisor/native.js')).href;

describe('closeInheritedFds: what the exec’ing process leaked, nothing of ours', () => {
  /**
   * A fresh Node with fds 40 and 41 inherited without close-on-exec (the spawn's dup2 leaves them
   * so; Node marks the low ones, up to ~19, close-on-exec as it boots) and one fd of its own (Node
   * opens everything close-on-exec).
   */
  function inheritedFdsRun(lastKept: number): { before: number[]; closed: number; after: number[]; own: number } {
    const code = `const { native } = await import(${JSON.stringify(nativeModule)}); const fs = await import('node:fs');
const own = fs.openSync('/proc/self/status', 'r');
const listed = () => fs.readdirSync('/proc/self/fd').map(Number).filter((fd) => fd === 40 || fd === 41 || fd === own);
const before = listed(); const closed = native.closeInheritedFds(${lastKept});
console.log(JSON.stringify({ before, closed, after: listed(), own }));`;
    const devNull = fs.openSync('/dev/null', 'r');
    try {
      const stdio = ['ignore', 'pipe', 'inherit', ...Array<'ignore'>(37).fill('ignore'), devNull, devNull];
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { ...BOUNDED, stdio, encoding: 'utf8' });
      return JSON.parse(run.stdout as string);
    } finally {
      fs.closeSync(devNull);
    }
  }

  it('closes the inherited fds above lastKept; keeps lastKept and below, and the close-on-exec ones', () => {
    const result = inheritedFdsRun(40);
    // The control: the child did have both inherited fds and its own.
    expect(result.before.sort()).toEqual([40, 41, result.own].sort());
    expect(result.after.sort()).toEqual([40, result.own].sort());
    // 41, and whatever this test's own parents leaked above 40.
    expect(result.closed).toBeGreaterThanOrEqual(1);
  });
});

describe('a callback from the addon’s queue that throws', () => {
  it('reaches uncaughtException, and the next spawn and its reap are still delivered (before startReaper spawnAsync refuses)', () => {
    const code = `const { native } = await import(${JSON.stringify(nativeModule)});
const seen = [];
process.on('uncaughtException', (error) => seen.push(error.message));
const options = (token) => ({ shell: '/bin/sh', command: 'exit 7', cwd: '/', env: [], cgroup: null, stdin: 'null', merge: true, token, forceFork: false });
let before = '';
try { native.spawnAsync(options(9), () => {}); } catch (error) { before = error.message; }
const reaped = new Map();
native.startReaper((child) => reaped.set(child.token, child.code));
native.spawnAsync(options(1), () => { throw new Error('thrown by the callback'); });
await new Promise((resolve) => setTimeout(resolve, 200));
const second = await new Promise((resolve, reject) => native.spawnAsync(options(2), (error, result) => (error ? reject(error) : resolve(result))));
// The result's wait kept the process alive; the reaps are reported after the results.
while (!reaped.has(2)) await new Promise((resolve) => setTimeout(resolve, 5));
console.log(JSON.stringify({ before, seen, secondPid: second.pid > 0, codes: [reaped.get(1), reaped.get(2)] }));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { ...BOUNDED, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      before: "spawnAsync needs the reaper's queue: call startReaper first",
      seen: ['thrown by the callback'],
      secondPid: true,
      codes: [7, 7],
    });
  });
});
