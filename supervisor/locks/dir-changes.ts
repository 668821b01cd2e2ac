/**
 * Wakes a lock wait when the lock directory changes. The kernel says nothing when an OFD lock is
 * released, but a holder clears its record in the lock file first (kernel-locks.ts: release), and
 * inotify reports that write for every file of the directory. So a waiter retries at once instead
 * of at its next poll, which was most of a handover between two runtimes (README, Resource locks).
 * The poll stays, for what writes nothing: a holder that died.
 *
 * The directory is watched through our own descriptor of it (/proc/self/fd/N), never by its path:
 * the path is the one another user may swap (lock-dir.ts). One watch serves every waiter and is
 * closed when none is left; a watch that cannot be made or fails leaves the waits to their polls.
 */
import fs from 'node:fs';

export class DirectoryChanges {
  private watcher: fs.FSWatcher | null = null;
  private readonly waiters = new Set<() => void>();
  private broken = false;
  private stopScheduled = false;

  constructor(private readonly dirFd: number) {}

  /** Resolves true at the directory's next change, or false after `ms` or once `signal` aborts. */
  next(ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(false);
      const wake = () => settle(true);
      const aborted = () => settle(false);
      const timer = setTimeout(aborted, ms);
      const settle = (changed: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        this.waiters.delete(wake);
        if (this.waiters.size === 0) this.stopUnlessWaitedOnAgain();
        resolve(changed);
      };
      signal.addEventListener('abort', aborted, { once: true });
      this.waiters.add(wake);
      this.start();
    });
  }

  private start(): void {
    if (this.watcher || this.broken) return;
    try {
      this.watcher = fs.watch(`/proc/self/fd/${this.dirFd}`, { persistent: false }, () => this.wakeAll());
      this.watcher.on('error', () => {
        this.broken = true;
        this.stop();
      });
    } catch {
      this.broken = true;
    }
  }

  /**
   * A wait that ends is usually followed at once by the next one of the same acquire (it looks,
   * finds the lock still held, and waits again): the watch is kept for that, not made afresh.
   */
  private stopUnlessWaitedOnAgain(): void {
    if (this.stopScheduled) return;
    this.stopScheduled = true;
    setImmediate(() => {
      this.stopScheduled = false;
      if (this.waiters.size === 0) this.stop();
    });
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private stop(): void {
    this.watcher?.close();
    this.watcher = null;
  }

  /** Ends every wait now (as a change would) and stops watching; for the supervisor's close. */
  close(): void {
    this.broken = true;
    this.wakeAll();
    this.stop();
  }
}
