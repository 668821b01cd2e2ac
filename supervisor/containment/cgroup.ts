/**
 * Containment by cgroup: each job gets a fresh cgroup, which the leader is born into (clone3
 * CLONE_INTO_CGROUP), so nothing can fork away unseen; `cgroup.kill` stops all at once and
 * `cgroup.events` says when the cgroup is empty.
 */
import fs from 'node:fs';
import path from 'node:path';
import { constants as os } from 'node:os';
import { native } from '../native.js';
import { jobCgroupName, subtreeName } from '../names.js';
import { removeCgroupTree } from '../platform/cgroup.js';
import { cgroupOf } from '../platform/procfs.js';
import type { KeptFiles } from '../platform/kept-files.js';
import type { Containment } from '../../src/protocol/messages.js';
import { sameProcess, signalIfStill, signalLeaderFirst } from './signal.js';
import { markedStragglers } from './stragglers.js';
import { CgroupsAhead, watchEvents } from './cgroup-ahead.js';
import type { ContainmentStrategy, JobIdentity } from './strategy.js';

const SIGKILL = os.signals.SIGKILL;

function parsePids(text: string): number[] {
  return text.length === 0 ? [] : text.trim().split('\n').map(Number);
}

function readPids(file: string): number[] {
  try {
    return parsePids(fs.readFileSync(file, 'latin1'));
  } catch {
    return [];
  }
}

/** Where a job's kept cgroup.procs and cgroup.stat are read (a job with more pids than fit falls back to a plain read). */
const keptBuffer = Buffer.allocUnsafe(16 * 1024);

/**
 * The job cgroup's pids and those of the cgroups below it, through its kept files: cgroup.procs,
 * then cgroup.stat, whose `nr_descendants 0` spares the walk of the directory in the usual case.
 * In that order, a process that moves into a new nested cgroup between the two reads was in
 * cgroup.procs when it was read, or is found by the walk.
 */
function jobTreePids(dir: string, files: KeptFiles): number[] {
  const procs = files.read('cgroup.procs', keptBuffer);
  if (procs === null) return cgroupTreePids(dir);
  const pids = parsePids(procs);
  const descendants = /^nr_descendants (\d+)$/m.exec(files.read('cgroup.stat', keptBuffer) ?? '')?.[1];
  return descendants === '0' ? pids : [...pids, ...nestedPids(dir)];
}

/** Every cgroup.procs in a cgroup and below it (a job may create nested cgroups). */
function cgroupTreePids(dir: string): number[] {
  return [...readPids(path.join(dir, 'cgroup.procs')), ...nestedPids(dir)];
}

/** The pids of the cgroups below `dir`. */
function nestedPids(dir: string): number[] {
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) if (entry.isDirectory()) pids.push(...cgroupTreePids(path.join(dir, entry.name)));
  return pids;
}

/** False only when cgroup.events says "populated 0" (or the cgroup is gone); a failed read says nothing. */
function mayBePopulated(dir: string): boolean {
  try {
    return native.cgroupPopulated(dir);
  } catch {
    return true;
  }
}

function openForWriting(file: string): number | null {
  try {
    return fs.openSync(file, 'w'); // libuv opens every file close-on-exec
  } catch {
    return null;
  }
}

export class CgroupStrategy implements ContainmentStrategy {
  readonly info: Containment;

  /** The next job's cgroup and watch, made ahead (see cgroup-ahead.ts). */
  private readonly ahead: CgroupsAhead;

  /** `root`: our subtree (`heph-jobs-<pid>-<start>`), already made. */
  constructor(private readonly root: string, reason: string) {
    this.info = { mode: 'cgroup', cgroupRoot: root, reason };
    this.ahead = new CgroupsAhead(root);
    this.everyJobKillFd = openForWriting(path.join(root, 'cgroup.kill'));
  }

  prepare(job: number): string {
    const dir = path.join(this.root, jobCgroupName(job));
    if (!this.ahead.take(job, dir)) native.cgroupCreate(dir);
    return dir;
  }

  prepareNext(): void {
    this.ahead.makeNext();
  }

  members(job: JobIdentity): number[] {
    // "populated 0" covers the cgroups below too: one small read instead of a walk of the tree
    // (the usual case once the leader has exited). Before the leader is reaped the read is spared:
    // the cgroup's tree is read anyway (empty if it has emptied) and a running job's status is
    // the common case.
    if (!job.cgroup || (job.leaderReaped && !mayBePopulated(job.cgroup))) return [];
    return job.files ? jobTreePids(job.cgroup, job.files) : cgroupTreePids(job.cgroup);
  }

  signalAll(job: JobIdentity, signal: number): void {
    // A pid read from cgroup.procs is ours while it is still in the job's cgroup (or one below).
    const own = `/${subtreeName()}/${jobCgroupName(job.job)}`;
    signalLeaderFirst(job, this.members(job), signal, (pid) => {
      const cgroup = cgroupOf(pid);
      return cgroup !== null && (cgroup.endsWith(own) || cgroup.includes(`${own}/`));
    });
  }

  killAll(job: JobIdentity): void {
    if (job.cgroup) native.cgroupKill(job.cgroup);
  }

  /**
   * The subtree's cgroup.kill, opened once. Every job's cgroup is below our subtree and we are not
   * in it: one write kills them all, and the kernel signals every process before any of them runs
   * again (one write per job let the first job's dying processes take the CPU from us before we
   * reached the last job). Never closed: the parent-death handler may write it at any moment
   * (main.ts, native killOnParentDeath). Null on a kernel without cgroup.kill (before 5.14).
   */
  readonly everyJobKillFd: number | null;

  killEveryJob(): boolean {
    if (this.everyJobKillFd === null) return false;
    try {
      fs.writeSync(this.everyJobKillFd, '1');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Empty when the cgroup is, and no process that left it (a job running as root can write its
   * pid into another cgroup) still carries the job's marker below us: escapers are reparented to
   * the supervisor, the subreaper, so they stay findable. The sweep of our children runs only
   * once the cgroup reports empty.
   */
  isEmpty(job: JobIdentity): boolean {
    if (job.cgroup !== null && native.cgroupPopulated(job.cgroup)) return false;
    const stragglers = markedStragglers(job);
    const seen = new Map(stragglers.map((entry) => [entry.pid, entry.start]));
    for (const { pid } of stragglers) signalIfStill(pid, SIGKILL, sameProcess(seen));
    return stragglers.length === 0;
  }

  watch(job: JobIdentity, onChange: () => void): () => void {
    if (!job.cgroup) return () => {};
    const { watcher } = this.ahead.watchFor(job.cgroup, onChange) ?? watchEvents(job.cgroup, onChange);
    return () => watcher.close();
  }

  release(job: JobIdentity): boolean {
    return job.cgroup === null || removeCgroupTree(job.cgroup, native.cgroupRemove);
  }

  dispose(): void {
    this.ahead.dispose();
    removeCgroupTree(this.root, native.cgroupRemove);
  }
}
