/**
 * When each job event happened (performance.now()), from runtime.onJobEvent. An event may come
 * before background() answers (it waits for cleanup when the job ends within the settle window),
 * so times are kept and a wait for an event already seen resolves at once.
 */
import { now } from './stats.mjs';

export class JobEvents {
  constructor(runtime) {
    this.times = new Map();
    this.waiters = new Map();
    this.stop = runtime.onJobEvent((event) => {
      const type = event.type === 'lost' ? 'exited' : event.type;
      // Only ends are timed (and forgotten): keeping the others would grow over a long run.
      if (type !== 'exited' && type !== 'cleaned-up') return;
      const key = `${type}:${event.job}`;
      const at = now();
      this.times.set(key, at);
      const waiter = this.waiters.get(key);
      if (waiter) {
        this.waiters.delete(key);
        waiter(at);
      }
    });
  }

  /** Resolves with the time of `type` ('exited' or 'cleaned-up') for job `job`. */
  wait(type, job) {
    const key = `${type}:${job}`;
    const at = this.times.get(key);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve) => this.waiters.set(key, resolve));
  }

  /** Forgets a job's times (long runs would otherwise keep them all). */
  forget(job) {
    this.times.delete(`exited:${job}`);
    this.times.delete(`cleaned-up:${job}`);
  }
}
