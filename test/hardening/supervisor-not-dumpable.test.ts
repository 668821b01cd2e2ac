/**
 * Issue 28, item 10: a job runs as its supervisor's uid, so with the supervisor dumpable it could
 * take the lock vault's descriptors with pidfd_getfd(2) (no Yama here), or read the supervisor's
 * /proc/PID/fd, then crash it and walk off with a lease. The supervisor makes itself non-dumpable
 * (prctl PR_SET_DUMPABLE 0) before anything else: a job of the same uid then gets EPERM and EACCES.
 * Negative control: the same job can do both to a dumpable process of that uid (its runtime).
 * The runtime runs as an unprivileged throwaway user (root may read any process anyway), in
 * process-group mode (an unprivileged user has no cgroup subtree of its own here).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { attackerForSuite, attackerUnavailable } from '../helpers/attacker.js';
import { FIXTURES, startRuntime } from '../helpers/runtime.js';
import { supervisorPid } from '../../src/testing.js';

describe.skipIf(attackerUnavailable !== null)('a job cannot reach into its supervisor (issue 28, item 10)', () => {
  const suite = attackerForSuite('dumpable');

  it('pidfd_getfd and /proc/<supervisor>/fd fail for a job of the same uid; both work on a dumpable process of that uid', () => {
    const out = suite.user().run(`${process.execPath} ${path.join(FIXTURES, 'peek-host.mjs')} ${path.join(suite.home(), 'locks')} process-group`);
    const { supervisorPid: sup, hostPid, uid, seen } = JSON.parse(out.trim().split('\n').pop()!) as {
      supervisorPid: number;
      hostPid: number;
      uid: number;
      seen: Record<string, { getfd: string; fds: string }> | string;
    };
    expect(uid).toBe(suite.user().uid);
    expect(typeof seen).toBe('object');
    const probes = seen as Record<string, { getfd: string; fds: string }>;
    expect(probes[String(hostPid)]).toEqual({ getfd: 'ok', fds: 'ok' });
    expect(probes[String(sup)]).toEqual({ getfd: 'EPERM', fds: 'EACCES' });
  });

  it('root still reads the supervisor\'s /proc (what the tests\' helpers read: fd, maps, environ)', async () => {
    const runtime = await startRuntime('process-group');
    await runtime.capabilities();
    const pid = supervisorPid(runtime)!;
    expect(fs.readdirSync(`/proc/${pid}/fd`).length).toBeGreaterThan(0);
    expect(fs.readFileSync(`/proc/${pid}/maps`, 'utf8')).toContain('.node');
    expect(fs.readFileSync(`/proc/${pid}/environ`, 'latin1')).toContain('HEPH_JOBS_PARENT_PID=');
  });
});
