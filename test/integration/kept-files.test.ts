/**
 * A job cgroup's files read through kept descriptors (supervisor/platform/kept-files.ts): every
 * status of a running job reads cgroup.procs, cgroup.stat and cpu.stat this way. Each read must
 * show the cgroup as it is now (a process moved in after the first read is counted, one in a
 * nested cgroup too), and the descriptors must be gone after close, which a job's cleanup calls.
 * Kernel truth: the processes are moved in through cgroup.procs, and the open descriptors are
 * the links in /proc/self/fd.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CgroupStrategy } from '../../supervisor/containment/cgroup.js';
import type { JobIdentity } from '../../supervisor/containment/index.js';
import { jobStats } from '../../supervisor/jobs/stats.js';
import { KeptFiles } from '../../supervisor/platform/kept-files.js';
import { waitUntil } from '../helpers/kernel.js';
import { writableCgroupParent } from '../helpers/modes.js';

const probe = writableCgroupParent();
const sleepers: ChildProcess[] = [];
/** Made by the test, innermost last: removed innermost first once their processes are gone. */
const cgroups: string[] = [];
const kept: KeptFiles[] = [];

afterEach(async () => {
  for (const child of sleepers.splice(0)) {
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
  for (const files of kept.splice(0)) files.close();
  for (const dir of cgroups.splice(0).reverse()) {
    // cgroup.procs leaves out tasks still exiting; "populated 0" says they are gone.
    await waitUntil(() => /^populated 0$/m.test(fs.readFileSync(path.join(dir, 'cgroup.events'), 'utf8')), `${dir} unpopulated`, 10_000);
    fs.rmdirSync(dir);
  }
});

function makeCgroup(dir: string): string {
  fs.mkdirSync(dir);
  cgroups.push(dir);
  return dir;
}

/** A sleeping process moved into `dir` (its pid written to cgroup.procs). */
async function sleeperIn(dir: string): Promise<number> {
  const child = spawn('sleep', ['1000'], { stdio: 'ignore' });
  sleepers.push(child);
  await once(child, 'spawn');
  fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(child.pid));
  return child.pid!;
}

/** Descriptors of this process open on a file in `dir` (not below it). */
function openIn(dir: string): string[] {
  const targets: string[] = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (path.dirname(target) === dir) targets.push(path.basename(target));
    } catch {
      // closed while listed (readdir's own descriptor)
    }
  }
  return targets.sort();
}

describe('kept cgroup files', () => {
  it('each read shows the cgroup as it is now, nested cgroups included, and close gives the descriptors back', async (context) => {
    if ('reason' in probe) context.skip(`no writable cgroup v2 tree: ${probe.reason}`);
    if (!('parent' in probe)) return;
    const dir = makeCgroup(path.join(probe.parent, `heph-kept-test-${process.pid}`));
    const files = new KeptFiles(dir);
    kept.push(files);
    const job: JobIdentity = { job: 0, pid: 0, marker: 'HEPH_JOB=test', cgroup: dir, files };
    const strategy = new CgroupStrategy(probe.parent, 'test');

    const first = await sleeperIn(dir);
    expect(strategy.members(job)).toEqual([first]);
    // Negative control for the descriptors: the reads above kept them open.
    expect(openIn(dir)).toEqual(['cgroup.procs', 'cgroup.stat']);

    // A read through the same descriptors shows a process moved in since.
    const second = await sleeperIn(dir);
    expect(strategy.members(job).sort()).toEqual([first, second].sort());

    // A nested cgroup: cgroup.stat no longer says 0 descendants, and its process is counted.
    const nested = makeCgroup(path.join(dir, 'nested'));
    const third = await sleeperIn(nested);
    expect(fs.readFileSync(path.join(dir, 'cgroup.procs'), 'latin1')).not.toContain(String(third));
    expect(strategy.members(job).sort()).toEqual([first, second, third].sort());

    const stats = jobStats(strategy, job);
    expect(stats.procs).toBe(3);
    expect(stats.cpuSeconds).not.toBeNull();
    expect(openIn(dir)).toEqual(['cgroup.procs', 'cgroup.stat', 'cpu.stat']);

    files.close();
    expect(openIn(dir)).toEqual([]);
    // After close a read opens the file for that read only, and still sees the cgroup.
    expect(strategy.members(job).sort()).toEqual([first, second, third].sort());
    expect(openIn(dir)).toEqual([]);
  });

  it('an absent file reads as null, and a removed cgroup too', (context) => {
    if ('reason' in probe) context.skip(`no writable cgroup v2 tree: ${probe.reason}`);
    if (!('parent' in probe)) return;
    const dir = path.join(probe.parent, `heph-kept-gone-${process.pid}`);
    fs.mkdirSync(dir);
    const files = new KeptFiles(dir);
    const buffer = Buffer.alloc(4096);
    try {
      expect(files.read('no-such-file', buffer)).toBeNull();
      expect(files.read('cpu.stat', buffer)).toMatch(/^usage_usec \d+$/m);
    } finally {
      fs.rmdirSync(dir);
    }
    // The kept descriptor outlived the cgroup: its read fails (ENODEV) and says null.
    expect(files.read('cpu.stat', buffer)).toBeNull();
    files.close();
    expect(openIn(dir)).toEqual([]);
  });
});

describe('kept files longer than a page', () => {
  it('a seq_file that stops at a page boundary is read on to its end', () => {
    // /proc/self/maps is a seq_file of one record per mapping, and Node's runs past a page: the
    // kernel's first read stops at its buffer of a page, short of what was asked.
    const files = new KeptFiles('/proc/self');
    kept.push(files);
    const buffer = Buffer.alloc(1024 * 1024);
    const fd = fs.openSync('/proc/self/maps', 'r');
    let first: number;
    try {
      first = fs.readSync(fd, buffer, 0, buffer.length, 0);
    } finally {
      fs.closeSync(fd);
    }
    const whole = fs.readFileSync('/proc/self/maps', 'latin1');
    // Negative control: one read does not return the whole file.
    expect(first).toBeLessThan(whole.length);
    const text = files.read('maps', buffer)!;
    expect(text.length).toBeGreaterThan(first);
    expect(text.endsWith('\n')).toBe(true);
    // Mappings may come and go between two reads; the first lines are the executable's, which stay.
    expect(text.split('\n').slice(0, 5)).toEqual(whole.split('\n').slice(0, 5));
  });
});
