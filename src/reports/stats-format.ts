/** How a running job's resources read in a report header: ` · 3 procs · 112 MB · cpu 4.1s · listening :5173`. */
import type { JobStats } from '../protocol/stats.js';
import { formatBytes } from '../wording/common.js';

export type { JobStats };
export { formatBytes };

/** The report suffix: ` · 3 procs · 112 MB · cpu 4.1s · listening :5173`; unknown parts and an
 * empty port list are left out. */
export function formatStats(stats: JobStats): string {
  const parts = [`${stats.procs} ${stats.procs === 1 ? 'proc' : 'procs'}`];
  if (stats.memoryBytes !== null) parts.push(formatBytes(stats.memoryBytes));
  if (stats.cpuSeconds !== null) parts.push(`cpu ${stats.cpuSeconds.toFixed(1)}s`);
  if (stats.ports.length > 0) parts.push(`listening ${formatPorts(stats.ports)}`);
  return parts.map((part) => ` · ${part}`).join('');
}

/** `:5173, :24678` — each port once, whatever its families and addresses; at most `max` shown. */
export function formatPorts(ports: Iterable<number | { port: number }>, max = 8): string {
  const numbers = [...new Set([...ports].map((entry) => (typeof entry === 'number' ? entry : entry.port)))].sort((a, b) => a - b);
  const shown = numbers.slice(0, max).map((port) => `:${port}`);
  if (numbers.length > max) shown.push(`+${numbers.length - max} more`);
  return shown.join(', ');
}
