/** A job's limits in a report: what stopped it, or what it runs under and what they did so far. */
import type { LimitFacts, LimitKind, LimitMechanism, LimitReached } from '../protocol/limits.js';
import { formatBytes, plural } from './common.js';

const HELD_BY: Record<LimitMechanism, string> = { 'cgroup-v2': 'cgroup', 'cgroup-v1': 'cgroup v1', watchdog: 'watchdog' };

function processCount(count: number): string {
  return `${count} ${count === 1 ? 'process' : 'processes'}`;
}

function limitText(kind: LimitKind, facts: LimitFacts): string | null {
  const { memoryBytes, processes, cpuMillis } = facts.set;
  const value = kind === 'memory' ? memoryBytes : kind === 'processes' ? processes : cpuMillis;
  if (value === null) return null;
  const what = kind === 'memory' ? `memory ${formatBytes(value)}` : kind === 'processes' ? processCount(value) : `${value / 1000} cpus`;
  const by = facts.by[kind];
  return `${what} (${by === null ? 'not held here: no cpu controller' : HELD_BY[by]})`;
}

/** The limit that stopped a job, in a word or three (`watch`'s state column). */
export function limitStopWords(reached: LimitReached): string {
  return reached === 'memory' ? 'memory limit' : reached === 'processes' ? 'process limit' : 'all-jobs memory limit';
}

/** `memory limit 128 MB reached (peak 129 MB)`: the limit that stopped the job, or null. */
export function limitReached(facts: LimitFacts): string | null {
  const peak = facts.peakMemoryBytes === null ? '' : ` (peak ${formatBytes(facts.peakMemoryBytes)})`;
  if (facts.reached === 'memory') return `memory limit ${formatBytes(facts.set.memoryBytes!)} reached${peak}`;
  if (facts.reached === 'processes') return `more than ${processCount(facts.set.processes!)} at once, its process limit`;
  if (facts.reached === 'all-jobs-memory' && facts.allJobs) {
    const { limitBytes, totalBytes } = facts.allJobs;
    const own = facts.peakMemoryBytes === null ? '' : `, this one ${formatBytes(facts.peakMemoryBytes)}, the most`;
    return `memory limit of all jobs ${formatBytes(limitBytes)} reached (all jobs ${formatBytes(totalBytes)}${own})`;
  }
  return null;
}

/**
 * `killed: memory limit 512 MB reached (peak 530 MB)` for a job a limit stopped; otherwise its
 * limits on one line, with the peak and what they did so far (forks refused, time held back).
 */
export function limitLines(facts: LimitFacts, state: string): string[] {
  const reached = limitReached(facts);
  if (reached !== null) return [`killed: ${reached}`];
  const notes: string[] = [];
  if (facts.peakMemoryBytes !== null && facts.set.memoryBytes !== null) notes.push(`peak ${formatBytes(facts.peakMemoryBytes)}`);
  if (facts.forkFailures) notes.push(`${plural(facts.forkFailures, 'fork')} refused at the process limit`);
  if (facts.throttledMs) notes.push(`held back ${(facts.throttledMs / 1000).toFixed(1)}s at the cpu limit`);
  if (facts.slowedAtMemoryHigh) {
    const pressure = facts.memoryPressure ? `, stalled ${facts.memoryPressure}% of the last 10 s` : '';
    notes.push(`slowed ${plural(facts.slowedAtMemoryHigh, 'time')} near its memory limit${pressure}`);
  }
  const limits = (['memory', 'processes', 'cpu'] as const).map((kind) => limitText(kind, facts)).filter((text) => text !== null);
  const verb = state === 'running' || state === 'starting' || state === 'waiting' ? 'limits' : 'ran under limits';
  return [`${verb}: ${limits.join(' · ')}${notes.length > 0 ? `; ${notes.join(', ')}` : ''}`];
}

/** What the mechanisms holding job limits here cannot promise (capabilities().limitations). */
export function limitLimitations(by: Record<LimitKind, LimitMechanism | null>, allJobsMemoryBytes: number | null = null): string[] {
  const said: string[] = [];
  if (by.memory === 'watchdog') {
    said.push(
      'Memory limits are held by a watchdog that samples every 100 ms: a job can go past its limit by what it allocates ' +
        'in that time before it is stopped, and pages shared by its processes count once per process.',
    );
  }
  if (by.memory === 'cgroup-v1') said.push('Memory limits (cgroup v1) count the page cache a job causes; a job at its limit waits until it is stopped (within 100 ms).');
  if (by.processes === 'watchdog') {
    said.push('Process limits are held by a watchdog: a fork past the limit does not fail; the job is stopped once it is seen above it (within 100 ms).');
  }
  if (allJobsMemoryBytes !== null) {
    said.push(
      `The memory limit of all jobs together (${formatBytes(allJobsMemoryBytes)}) is held by a watchdog that samples every 100 ms: ` +
        'the jobs can go past it by what they allocate in that time, and then the job using the most is stopped.',
    );
  }
  if (by.cpu === 'watchdog') {
    said.push("CPU limits are held by a watchdog that freezes a job's cgroup when its CPU time runs ahead of its share (looked at every 100 ms): the job runs in bursts, not evenly.");
  }
  if (by.cpu === null) said.push('CPU limits cannot be held here (no cpu controller in reach): a job given cpus runs unthrottled, and its report says so.');
  return said;
}
