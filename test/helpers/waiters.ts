/** Checks re-run whenever a test's child process says something new (a line, an output chunk). */
export class Waiters {
  private readonly checks = new Set<() => void>();

  /** `transcript` is what a failure shows: everything read so far. */
  constructor(private readonly transcript: () => string) {}

  /** Re-runs every pending check: call it on each new input. */
  changed(): void {
    for (const check of [...this.checks]) check();
  }

  /**
   * Resolves with `check()`'s first truthy value; fails after `ms`, or as soon as `hopeless()`
   * names a reason it never can succeed (the child exited), showing the transcript.
   */
  until<T>(check: () => T | null | undefined | false, what: string, ms: number, hopeless: () => string | null = () => null): Promise<T> {
    return new Promise((resolve, reject) => {
      const settle = (outcome: () => void) => {
        clearTimeout(timer);
        this.checks.delete(test);
        outcome();
      };
      const test = () => {
        const value = check();
        if (value) return settle(() => resolve(value));
        const reason = hopeless();
        if (reason !== null) settle(() => reject(new Error(`${reason} while waiting for ${what}\n${this.transcript()}`)));
      };
      const timer = setTimeout(() => settle(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}\n${this.transcript()}`))), ms);
      this.checks.add(test);
      test();
    });
  }
}
