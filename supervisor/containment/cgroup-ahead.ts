/**
 * The cgroup of the job expected next (the one after the newest prepared; job numbers only grow),
 * made once a spawn has been answered, with its `cgroup.events` watch: that spawn then waits for
 * neither the mkdir nor the inotify watch (each tens of microseconds on cgroupfs). The directory
 * is empty until that job is born into it. One made for a number no spawn came with is removed
 * when the next is made; the subtree's removal (dispose, or the start sweep after a crash) takes
 * whatever is left.
 */
import fs from 'node:fs';
import path from 'node:path';
import { native } from '../native.js';
import { jobCgroupName } from '../names.js';

/** A watch on a cgroup's `cgroup.events` whose listener is given later (by the job it goes to). */
export interface EventsWatch {
  watcher: fs.FSWatcher;
  listener: () => void;
}

/** Watches `dir`/cgroup.events; `onChange` also hears errors (a hint: callers re-check). */
export function watchEvents(dir: string, onChange: () => void): EventsWatch {
  const watch: EventsWatch = { watcher: null as unknown as fs.FSWatcher, listener: onChange };
  // cgroup.events is modified (inotify IN_MODIFY) whenever "populated" flips.
  watch.watcher = fs.watch(path.join(dir, 'cgroup.events'), { persistent: false }, () => watch.listener());
  watch.watcher.on('error', () => watch.listener());
  return watch;
}

export class CgroupsAhead {
  private newest = -1;
  private ahead: { job: number; watch: EventsWatch | null } | null = null;
  /** The watch of the cgroup `take` handed out last, until the job's setup asks for it. */
  private handed: { dir: string; watch: EventsWatch } | null = null;

  constructor(private readonly root: string) {}

  /** True when `job`'s cgroup (at `dir`) was made ahead: the caller makes none. */
  take(job: number, dir: string): boolean {
    this.newest = Math.max(this.newest, job);
    // A job whose setup failed before its watch never asked for it.
    this.handed?.watch.watcher.close();
    this.handed = null;
    if (this.ahead?.job !== job) return false;
    if (this.ahead.watch) this.handed = { dir, watch: this.ahead.watch };
    this.ahead = null;
    return true;
  }

  /** The watch made ahead for the cgroup at `dir`, now listened to by `onChange`; null if none. */
  watchFor(dir: string, onChange: () => void): EventsWatch | null {
    if (this.handed?.dir !== dir) return null;
    const { watch } = this.handed;
    this.handed = null;
    watch.listener = onChange;
    return watch;
  }

  makeNext(): void {
    const job = this.newest + 1;
    if (this.ahead?.job === job) return;
    if (this.ahead !== null) this.drop(this.ahead);
    const dir = path.join(this.root, jobCgroupName(job));
    try {
      native.cgroupCreate(dir);
    } catch {
      return; // The spawn makes it then, and says why if it cannot.
    }
    let watch: EventsWatch | null = null;
    try {
      watch = watchEvents(dir, () => {});
    } catch {
      // The job's setup watches it then, and fails the spawn as before if it cannot.
    }
    this.ahead = { job, watch };
  }

  /** Closes the watches; the directories go with the subtree. */
  dispose(): void {
    this.ahead?.watch?.watcher.close();
    this.handed?.watch.watcher.close();
    this.ahead = null;
    this.handed = null;
  }

  private drop(ahead: { job: number; watch: EventsWatch | null }): void {
    ahead.watch?.watcher.close();
    this.ahead = null;
    try {
      native.cgroupRemove(path.join(this.root, jobCgroupName(ahead.job)));
    } catch {
      // Gone already, or busy: the subtree's removal takes it.
    }
  }
}
