/**
 * Supervisors in different pid namespaces that share a cgroup parent (containers sharing the
 * host's cgroup tree, a sandbox that unshares only pids). Each one's start sweep judges the
 * subtrees under the parent and stops what dead instances left; an instance is judged by its pid
 * and start time in /proc, which shows only the judge's own namespace (and those below it). So a
 * subtree made by a supervisor of another namespace must never be judged: from inside a
 * namespace every instance outside looks dead, and from outside a pid of the namespace inside
 * names some other process. A fresh-clone CI run saw this: a test host's supervisor in a
 * namespace of its own stopped a job of another test file.
 *
 * Both directions are checked, each with a positive control: a dead instance's subtree planted
 * in the judge's own namespace (test/fixtures/dead-subtree.mjs), which the sweep must stop and
 * remove, tells that the sweep has judged the whole parent. Cgroup mode only: without cgroups
 * there are no subtrees, and a process's marker is judged only in the judge's namespace.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { JobRuntime } from '../../src/index.js';
import { supervisorHello } from '../../src/testing.js';
import { EofOracle, waitUntil } from '../helpers/kernel.js';
import { cgroupUnavailable } from '../helpers/modes.js';
import { inPidNamespace, pidNamespaceProblem, privateCgroupParent } from '../helpers/namespaces.js';
import { FIXTURES } from '../helpers/runtime.js';
// @ts-expect-error: a plain ESM fixture, shared with the host that runs in the namespace
import { plantDeadSubtree } from '../fixtures/dead-subtree.mjs';

const HOST = path.join(FIXTURES, 'pidns-sweep-host.mjs');
const noPidNamespace = pidNamespaceProblem();
if (noPidNamespace) console.warn(`[heph-jobs tests] supervisors in two pid namespaces skipped: ${noPidNamespace}`);

/** What a job's cgroup holds now (pids as our namespace numbers them). */
function members(cgroup: string): string[] {
  return fs.readFileSync(path.join(cgroup, 'cgroup.procs'), 'latin1').split('\n').filter(Boolean);
}

describe('supervisors in two pid namespaces under one cgroup parent', () => {
  it.skipIf(cgroupUnavailable !== null || noPidNamespace !== null)('each sweep leaves the other namespace\'s live jobs alone', async () => {
    const parent = privateCgroupParent('pidns')!;
    const outsideJob = new EofOracle();
    const insideJob = new EofOracle();
    const runtimes: JobRuntime[] = [];
    const host = spawn('unshare', inPidNamespace(process.execPath, [HOST, parent, `${insideJob.prefix}exec sleep 1000`]), {
      stdio: ['pipe', 'pipe', 'inherit'],
      // Started only once the outside job runs (below): the host waits for a line on stdin first.
    });
    const hostExited = new Promise<number | null>((resolve) => host.once('exit', resolve));
    try {
      // Outside: a runtime with a live job in the shared parent.
      const outside = await JobRuntime.start({ containment: 'cgroup', cgroupParent: parent, settleMs: 0, killGraceMs: 1000 });
      runtimes.push(outside);
      const job = await outside.background({ command: `${outsideJob.prefix}exec sleep 1000` });
      expect(job.state).toBe('running');
      const outsideCgroup = path.join(supervisorHello(outside)!.containment.cgroupRoot!, `job-${job.id}`);
      expect(members(outsideCgroup)).toEqual([String(job.pid)]);

      // Inside: a supervisor starts and sweeps the parent (its planted dead subtree gone says it has).
      host.stdin.write('go\n');
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: host.stdout }).once('line', resolve);
        host.once('exit', (code) => reject(new Error(`the namespace host exited early (${code})`)));
      });
      const inside = JSON.parse(line) as { cgroupRoot: string; job: number; state: string };
      expect(inside.state).toBe('running');
      // The outside job lives: its pipe has no EOF, its cgroup still holds it (the oracles can
      // fail: the inside job's are checked the same way once the outside sweep has run).
      expect(await outsideJob.eofWithin(300)).toBe(false);
      expect(members(outsideCgroup)).toEqual([String(job.pid)]);
      expect((await outside.status(job.id)).state).toBe('running');

      // Outside again: a new supervisor sweeps the parent, with a dead subtree of our namespace planted.
      const planted = plantDeadSubtree(parent);
      try {
        const next = await JobRuntime.start({ containment: 'cgroup', cgroupParent: parent, settleMs: 0, killGraceMs: 1000 });
        runtimes.push(next);
        await next.capabilities();
        await planted.swept(20_000);
      } finally {
        await planted.dispose();
      }
      const insideCgroup = path.join(inside.cgroupRoot, `job-${inside.job}`);
      expect(await insideJob.eofWithin(300)).toBe(false);
      expect(members(insideCgroup)).toHaveLength(1);
      expect(members(outsideCgroup)).toEqual([String(job.pid)]);

      // Each runtime still stops its own: the oracles reach EOF.
      host.stdin.end();
      expect(await hostExited).toBe(0);
      await insideJob.waitEof(10_000);
      await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
      await outsideJob.waitEof(10_000);
    } finally {
      host.stdin.end();
      await Promise.race([hostExited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      if (host.exitCode === null) host.kill('SIGTERM');
      await Promise.all(runtimes.map((runtime) => runtime.close()));
      await waitUntil(() => fs.readdirSync(parent, { withFileTypes: true }).every((entry) => !entry.isDirectory()), `${parent} emptied`);
      fs.rmdirSync(parent);
      outsideJob.dispose();
      insideJob.dispose();
    }
  });
});
