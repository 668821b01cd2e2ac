/**
 * `watch`'s table of the session's jobs (state, elapsed, processes, memory, CPU time, ports, the
 * last line of output): its rows, its rendering (coloured and with a selected row on a terminal,
 * see watch-live.ts), and, without a terminal, one table (or one JSON object) per frame.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { formatElapsed, type JobReport } from '../reports/report.js';
import { formatBytes as formatMemory } from '../reports/stats-format.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { NO_COLOUR, reverse, type Palette } from './colour.js';
import { toolPortOf } from '../runtime/tool-port.js';
import { limitStopWords } from '../reports/report.js';

/** The per-job figures the runtime reports (`JobReport.stats`, running jobs only); null where absent. */
export interface ShownStats {
  procs: number | null;
  memoryBytes: number | null;
  cpuMs: number | null;
  ports: number[] | null;
}

export interface WatchRow {
  id: number;
  state: string;
  elapsedMs: number;
  command: string;
  lastLine: string | null;
  /** The stream the last line came from. */
  lastStream: 'stdout' | 'stderr' | null;
  stats: ShownStats;
  running: boolean;
}

export interface WatchView {
  title: string;
  rows: WatchRow[];
  /** Shown instead of rows when there are none. */
  empty: string;
  /** Lines under the table. */
  footer: string[];
}

/** How a terminal shows the table: colours, and the selected row (by job id) in reverse video. */
export interface WatchStyle {
  palette: Palette;
  selectedId: number | null;
}

const PLAIN: WatchStyle = { palette: NO_COLOUR, selectedId: null };

const NO_STATS: ShownStats = { procs: null, memoryBytes: null, cpuMs: null, ports: null };

/** Widest the command column gets; the last line takes what is left. */
const COMMAND_WIDTH = 32;
const PORTS_WIDTH = 18;

/** The stats of a running job's report (the runtime reports none for a finished one). */
export function readStats(report: JobReport): ShownStats {
  const stats = report.stats;
  if (!stats) return NO_STATS;
  return {
    procs: stats.procs,
    memoryBytes: stats.memoryBytes,
    cpuMs: stats.cpuSeconds === null ? null : Math.round(stats.cpuSeconds * 1000),
    ports: stats.ports,
  };
}

/** `exited 0`, `killed SIGTERM`, `running`. */
export function stateWord(report: Pick<JobReport, 'state' | 'exitCode' | 'signal'> & { limits?: JobReport['limits'] }): string {
  if (report.state === 'exited') return `exited ${report.exitCode ?? '?'}`;
  if (report.state === 'killed' && report.limits?.reached) return `killed: ${limitStopWords(report.limits.reached)}`;
  if (report.state === 'killed') return `killed ${report.signal ?? '?'}`;
  return report.state;
}

/** A line of a job's output as one table cell: what a terminal would show last, no control codes. */
export function cleanLine(text: string): string {
  const afterReturn = text.slice(text.lastIndexOf('\r') + 1) || text;
  return afterReturn
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '')
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b./g, '')
    .replace(/[\x00-\x1f\x7f]/g, ' ')
    .trim();
}

export function rowOf(report: JobReport): WatchRow {
  const last = report.output?.lines.at(-1);
  return {
    id: report.id,
    state: stateWord(report),
    elapsedMs: report.elapsedMs,
    command: cleanLine(report.command.replace(/\n/g, ' ')),
    lastLine: last ? `${last.stream === 'stderr' ? '! ' : ''}${cleanLine(last.text)}` : null,
    lastStream: last ? last.stream : null,
    stats: readStats(report),
    running: report.state === 'running',
  };
}

/** Every job of the runtime with its last line (one short read each). */
export async function collectRows(runtime: JobRuntime): Promise<WatchRow[]> {
  return Promise.all(
    runtime.list().map(async (job) => {
      try {
        return rowOf(await runtime.status(job.id, { lines: 1 }));
      } catch {
        return rowOf(job); // forgotten or unreadable meanwhile: what the list said
      }
    }),
  );
}

/** Memory as the reports write it (`112 MB`), `-` when unknown. */
export function formatBytes(bytes: number | null): string {
  return bytes === null ? '-' : formatMemory(bytes);
}

export function formatCpu(ms: number | null): string {
  if (ms === null) return '-';
  return ms < 100_000 ? `${(ms / 1000).toFixed(1)}s` : formatElapsed(ms);
}

function formatPorts(ports: number[] | null): string {
  if (ports === null) return '-';
  return ports.length === 0 ? '' : ports.map((port) => `:${port}`).join(' ');
}

function fit(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text + ' '.repeat(width - chars.length);
  return width <= 1 ? chars.slice(0, width).join('') : `${chars.slice(0, width - 1).join('')}…`;
}

/** `text` in at most `width` characters, an ellipsis marking a cut. */
export function clip(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}

/** `text` with `paint` applied to characters [start, end) (clamped to the text). */
function paintRange(text: string, start: number, end: number, paint: (part: string) => string): string {
  const chars = [...text];
  const from = Math.min(start, chars.length);
  const to = Math.min(end, chars.length);
  if (from >= to) return text;
  return chars.slice(0, from).join('') + paint(chars.slice(from, to).join('')) + chars.slice(to).join('');
}

/**
 * The table as lines of at most `width` characters (and at most `height` lines, when given; the
 * selected row is kept in view). `style` colours states and stderr lines and marks the selected row.
 */
export function renderWatch(view: WatchView, width: number, height?: number, style: WatchStyle = PLAIN): string[] {
  const headers = ['ID', 'STATE', 'ELAPSED', 'PROCS', 'MEM', 'CPU', 'PORTS', 'COMMAND', 'LAST LINE'];
  const right = [true, false, true, true, true, true, false, false, false];
  const STATE = 1;
  const LAST = headers.length - 1;
  const cells = view.rows.map((row) => [
    String(row.id),
    row.state,
    formatElapsed(row.elapsedMs),
    row.stats.procs === null ? '-' : String(row.stats.procs),
    formatBytes(row.stats.memoryBytes),
    formatCpu(row.stats.cpuMs),
    formatPorts(row.stats.ports),
    row.command,
    row.lastLine ?? '',
  ]);
  const caps = [Infinity, Infinity, Infinity, Infinity, Infinity, Infinity, PORTS_WIDTH, COMMAND_WIDTH, Infinity];
  const widths = headers.map((header, i) => Math.min(caps[i]!, Math.max(header.length, ...cells.map((row) => [...row[i]!].length))));
  /** The cells of a row as laid out, and where each starts in the line. */
  const layout = (row: string[]) => {
    const parts = row.map((cell, i) => (i === row.length - 1 ? cell : right[i] ? fit(cell, widths[i]!).trimEnd().padStart(widths[i]!) : fit(cell, widths[i]!)));
    const starts: number[] = [];
    let at = 0;
    for (const part of parts) {
      starts.push(at);
      at += [...part].length + 2;
    }
    return { text: clip(parts.join('  ').trimEnd(), width), starts };
  };
  const rowLine = (row: string[], index: number) => {
    const { text, starts } = layout(row);
    const data = view.rows[index]!;
    // The last cell first: painting adds characters, which would shift the cells after it.
    let line = data.lastStream === 'stderr' ? paintRange(text, starts[LAST]!, Infinity, style.palette.stderr) : text;
    line = paintRange(line, starts[STATE]!, starts[STATE]! + [...data.state].length, (part) => style.palette.state(data.state, part));
    if (data.id !== style.selectedId) return line;
    // The selected row in reverse video across the width, so it shows even with no colour.
    return reverse(line + ' '.repeat(Math.max(0, width - [...text].length)));
  };
  const lines = [clip(view.title, width), '', layout(headers).text];
  const room = height === undefined ? Infinity : Math.max(1, height - lines.length - view.footer.length - 1);
  if (cells.length === 0) lines.push(clip(view.empty, width));
  let first = 0;
  let count = cells.length;
  if (cells.length > room) {
    count = room - 1;
    const selected = view.rows.findIndex((row) => row.id === style.selectedId);
    if (selected >= count) first = Math.min(selected - count + 1, cells.length - count);
  }
  for (let i = first; i < first + count; i++) lines.push(rowLine(cells[i]!, i));
  if (count < cells.length) lines.push(`… ${cells.length - count} more`);
  if (view.footer.length > 0) lines.push('', ...view.footer.map((text) => clip(text, width)));
  return lines;
}

export interface WatchOptions {
  runtime: JobRuntime;
  /** Milliseconds between frames. */
  intervalMs: number;
  /** What the table is empty with (where to start jobs from). */
  empty: string;
  /** Extra lines under the table (e.g. a command that could not be started). */
  notes?: string[];
}

export function title(runtime: JobRuntime, rows: readonly WatchRow[]): string {
  const running = rows.filter((row) => row.running).length;
  const mode = runtime.containmentMode;
  const clock = new Date().toTimeString().slice(0, 8);
  return `heph-jobs watch · ${running} of ${toolPortOf(runtime).settings.maxJobs} running${mode ? ` · ${mode}` : ''} · ${clock}`;
}

/** One frame as JSON: every job's report fields (no output), with its last line. */
export function frameJson(runtime: JobRuntime, rows: readonly WatchRow[], reports: readonly JobReport[]): Record<string, unknown> {
  const lastLines = new Map(rows.map((row) => [row.id, row.lastLine]));
  return {
    type: 'watch',
    at: Date.now(),
    running: rows.filter((row) => row.running).length,
    maxJobs: toolPortOf(runtime).settings.maxJobs,
    jobs: reports.map(({ output: _output, text: _text, ...report }) => ({ ...report, lastLine: lastLines.get(report.id) ?? null })),
  };
}

/**
 * Without a terminal, like `top -b`: one table (or JSON object) per frame, until `until()` says
 * stop (checked after each frame; the last frame is always printed).
 */
export async function watchFrames(
  options: WatchOptions & { output: NodeJS.WritableStream; json: boolean; until: () => boolean; signal?: AbortSignal },
): Promise<void> {
  const { runtime, output } = options;
  for (;;) {
    // Decided before the read, so the last frame printed shows the state that ended the watch.
    const last = options.until() || options.signal?.aborted === true;
    const reports = await Promise.all(runtime.list().map((job) => runtime.status(job.id, { lines: 1 }).catch(() => job)));
    const rows = reports.map(rowOf);
    if (options.json) {
      output.write(`${JSON.stringify(frameJson(runtime, rows, reports))}\n`);
    } else {
      const view: WatchView = { title: title(runtime, rows), rows, empty: options.empty, footer: options.notes ?? [] };
      output.write(`${renderWatch(view, 160).join('\n')}\n\n`);
    }
    if (last) return;
    await delay(options.intervalMs, undefined, options.signal ? { signal: options.signal } : {}).catch(() => undefined);
    if (options.signal?.aborted) return;
  }
}
