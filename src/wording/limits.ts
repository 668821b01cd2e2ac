/** A job's limits in a report: what stopped it, or what it runs under and what they did so far. */
import type { LimitFacts, LimitKind, LimitMechanism } from '../protocol/limits.js';
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

/**
 * `killed: memory limit 512 MB reached (peak 530 MB)` for a job a limit stopped; otherwise its
 * limits on one line, with the peak and what they did so far (forks refused, time held back).
 */
export function limitLines(facts: LimitFacts, state: string): string[] {
  const peak = facts.peakMemoryBytes === null ? '' : ` (peak ${formatBytes(facts.peakMemoryBytes)})`;
  if (facts.reached === 'memory') return [`killed: memory limit ${formatBytes(facts.set.memoryBytes!)} reached${peak}`];
  if (facts.reached === 'processes') return [`killed: more than ${processCount(facts.set.processes!)} at once, its process limit`];
  const notes: string[] = [];
  if (facts.peakMemoryBytes !== null && facts.set.memoryBytes !== null) notes.push(`peak ${formatBytes(facts.peakMemoryBytes)}`);
  if (facts.forkFailures) notes.push(`${plural(facts.forkFailures, 'fork')} refused at the process limit`);
  if (facts.throttledMs) notes.push(`held back ${(facts.throttledMs / 1000).toFixed(1)}s at the cpu limit`);
  const limits = (['memory', 'processes', 'cpu'] as const).map((kind) => limitText(kind, facts)).filter((text) => text !== null);
  const verb = state === 'running' || state === 'starting' || state === 'waiting' ? 'limits' : 'ran under limits';
  return [`${verb}: ${limits.join(' · ')}${notes.length > 0 ? `; ${notes.join(', ')}` : ''}`];
}
