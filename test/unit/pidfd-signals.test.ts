/**
 * Item 11 of issue 12: no signal by plain pid in the supervisor where a pidfd fits. A pid read
 * from /proc or cgroup.procs may name another process by the time the signal is sent; a pidfd
 * opened before the check that the pid is still ours cannot. The one kill(2) left is the group
 * signal of signalGroupOf (containment/signal.ts), sent while a pidfd pins the group leader's pid.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SUPERVISOR = path.resolve(import.meta.dirname, '../../supervisor');
/** Where a plain-pid signal is allowed: file, and the function it must sit in. */
const ALLOWED = [{ file: 'containment/signal.ts', inFunction: 'signalGroupOf' }];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Calls that signal by pid number (`signalPid(`, `process.kill(`), as `file:line in function`. */
function plainPidSignals(file: string, text: string): { where: string; inFunction: string | null }[] {
  const found: { where: string; inFunction: string | null }[] = [];
  for (const match of text.matchAll(/\b(?:native\.signalPid|process\.kill)\s*\(/g)) {
    const before = text.slice(0, match.index);
    const line = before.split('\n').length;
    const functions = [...before.matchAll(/function\s+([A-Za-z0-9_]+)\s*\(/g)];
    found.push({ where: `${file}:${line}`, inFunction: functions.at(-1)?.[1] ?? null });
  }
  return found;
}

describe('signals in the supervisor', () => {
  it('go through pidfds: no signalPid or process.kill by plain pid outside the pinned group signal', () => {
    const offending: string[] = [];
    let allowedSeen = 0;
    for (const file of sources(SUPERVISOR)) {
      const relative = path.relative(SUPERVISOR, file);
      for (const call of plainPidSignals(relative, fs.readFileSync(file, 'utf8'))) {
        if (ALLOWED.some((allowed) => allowed.file === relative && allowed.inFunction === call.inFunction)) allowedSeen++;
        else offending.push(`${call.where} (in ${call.inFunction ?? 'top level'})`);
      }
    }
    expect(offending).toEqual([]);
    expect(allowedSeen).toBe(1);
  });

  it('the scan finds a plain-pid signal where one is planted (negative control)', () => {
    const planted = [
      'function killStraggler(pid: number) {',
      '  native.signalPid(pid, SIGKILL);',
      '}',
      'function other() { process.kill(pid, "SIGKILL"); }',
    ].join('\n');
    expect(plainPidSignals('planted.ts', planted)).toEqual([
      { where: 'planted.ts:2', inFunction: 'killStraggler' },
      { where: 'planted.ts:4', inFunction: 'other' },
    ]);
  });
});
