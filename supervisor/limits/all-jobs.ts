/**
 * The memory limit of all jobs together (hello's `allJobsMemoryBytes`): every running job's memory
 * summed each LIMIT_WATCH_MS, and over the limit the job using the most stopped whole, then the
 * next, until the rest fit. A watchdog wherever we run: no controller spans our jobs alone.
 */
import { LIMIT_WATCH_MS } from './job-limits.js';

/** What the watchdog needs of a job. */
export interface MeteredJob {
  /** Its memory now; null once it is being stopped or is done. */
  memoryForAllJobs(): number | null;
  stopForAllJobs(sample: { limitBytes: number; totalBytes: number; jobBytes: number }): void;
}

/** Starts the watchdog over `jobs()`; returns the function that stops it. */
export function watchAllJobsMemory(limitBytes: number, jobs: () => Iterable<MeteredJob>): () => void {
  const ticker = setInterval(() => {
    const samples: { job: MeteredJob; bytes: number }[] = [];
    for (const job of jobs()) {
      const bytes = job.memoryForAllJobs();
      if (bytes !== null) samples.push({ job, bytes });
    }
    let totalBytes = samples.reduce((sum, sample) => sum + sample.bytes, 0);
    if (totalBytes <= limitBytes) return;
    samples.sort((a, b) => b.bytes - a.bytes);
    for (const { job, bytes } of samples) {
      job.stopForAllJobs({ limitBytes, totalBytes, jobBytes: bytes });
      totalBytes -= bytes;
      if (totalBytes <= limitBytes) return;
    }
  }, LIMIT_WATCH_MS);
  ticker.unref();
  return () => clearInterval(ticker);
}
