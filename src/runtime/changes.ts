/**
 * "Something about the jobs changed": every event from the supervisor and every state change the
 * runtime makes calls `notify()`, and a caller waiting for a condition re-checks it then. No
 * polling: a waiter costs nothing until a change happens.
 */
export class Changes {
  private readonly waiters = new Set<() => void>();

  notify(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Resolves true when `predicate` holds (checked now and on every change), false after `ms`. */
  until(predicate: () => boolean, ms: number): Promise<boolean> {
    if (predicate()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (result: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(result);
      };
      const check = () => {
        if (predicate()) finish(true);
      };
      const timer = setTimeout(() => finish(predicate()), ms);
      this.waiters.add(check);
    });
  }
}
