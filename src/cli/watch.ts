/**
 * `watch`: a table of the session's jobs (state, elapsed, processes, memory, CPU time, ports, the
 * last line of output) redrawn in place until a key is pressed, the way `top` does: the terminal's
 * alternate screen, the cursor hidden, keys read in raw mode, and the screen given back as it was.
 * Without a terminal it prints one table (or one JSON object) per frame instead.
 */
import { emitKeypressEvents } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { formatElapsed, type JobReport } from '../reports/report.js';
import { formatBytes as formatMemory } from '../reports/stats-format.js';
import type { JobRuntime } from '../runtime/job-runtime.js';

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

const NO_STATS: ShownStats = { procs: null, memoryBytes: null, cpuMs: null, ports: null };

// Alternate screen on, cursor hidden / cursor shown, alternate screen off (xterm, and every
// terminal emulator in use since).
const ENTER_SCREEN = '\x1b[?1049h\x1b[?25l';
const LEAVE_SCREEN = '\x1b[?25h\x1b[?1049l';
const HOME = '\x1b[H';
const CLEAR_LINE_RIGHT = '\x1b[K';
const CLEAR_BELOW = '\x1b[J';
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
export function stateWord(report: Pick<JobReport, 'state' | 'exitCode' | 'signal'>): string {
  if (report.state === 'exited') return `exited ${report.exitCode ?? '?'}`;
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

function clip(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, Math.max(0, width - 1)).join('')}…`;
}

/** The table as lines of at most `width` characters (and at most `height` lines, when given). */
export function renderWatch(view: WatchView, width: number, height?: number): string[] {
  const headers = ['ID', 'STATE', 'ELAPSED', 'PROCS', 'MEM', 'CPU', 'PORTS', 'COMMAND', 'LAST LINE'];
  const right = [true, false, true, true, true, true, false, false, false];
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
  const line = (row: string[]) =>
    clip(
      row
        .map((cell, i) => (i === row.length - 1 ? cell : right[i] ? fit(cell, widths[i]!).trimEnd().padStart(widths[i]!) : fit(cell, widths[i]!)))
        .join('  ')
        .trimEnd(),
      width,
    );
  const lines = [clip(view.title, width), '', line(headers)];
  const room = height === undefined ? Infinity : Math.max(1, height - lines.length - view.footer.length - 1);
  if (cells.length === 0) lines.push(clip(view.empty, width));
  const shown = cells.length > room ? cells.slice(0, room - 1) : cells;
  for (const row of shown) lines.push(line(row));
  if (shown.length < cells.length) lines.push(`… ${cells.length - shown.length} more`);
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

function title(runtime: JobRuntime, rows: readonly WatchRow[]): string {
  const running = rows.filter((row) => row.running).length;
  const mode = runtime.containmentMode;
  const clock = new Date().toTimeString().slice(0, 8);
  return `heph-jobs watch · ${running} of ${runtime.settings.maxJobs} running${mode ? ` · ${mode}` : ''} · ${clock}`;
}

/**
 * The live table on a terminal, until a key is pressed (or the input ends). While it runs it has
 * the keys to itself: whoever else listens for keypresses on `input` (the shell's readline) is
 * detached and given them back afterwards, so the key that stops the table goes nowhere else.
 */
/** The terminal a live watch has taken over, if one is running (see restoreScreen). */
let liveOutput: NodeJS.WriteStream | null = null;

/** Gives the terminal back (normal screen, cursor shown) if a live watch has it: for an exit by signal. */
export function restoreScreen(): void {
  liveOutput?.write(LEAVE_SCREEN);
  liveOutput = null;
}

export async function watchLive(options: WatchOptions & { input: NodeJS.ReadStream; output: NodeJS.WriteStream; footer: string }): Promise<void> {
  const { runtime, input, output } = options;
  const stop = new AbortController();
  const saved = input.listeners('keypress') as ((...args: unknown[]) => void)[];
  input.removeAllListeners('keypress');
  emitKeypressEvents(input);
  const wasRaw = input.isTTY ? input.isRaw : false;
  const wasPaused = input.isPaused();
  const onKey = () => stop.abort();
  input.on('keypress', onKey);
  input.once('end', onKey);
  if (input.isTTY) input.setRawMode(true);
  input.resume();
  let wake: () => void = () => undefined;
  const onResize = () => wake();
  output.on('resize', onResize);
  output.write(ENTER_SCREEN);
  liveOutput = output;
  try {
    while (!stop.signal.aborted) {
      const rows = await collectRows(runtime);
      if (stop.signal.aborted) break;
      const view: WatchView = { title: title(runtime, rows), rows, empty: options.empty, footer: [...(options.notes ?? []), options.footer] };
      const lines = renderWatch(view, output.columns || 80, output.rows || undefined);
      output.write(HOME + lines.map((text) => text + CLEAR_LINE_RIGHT).join('\r\n') + CLEAR_BELOW);
      const resized = new Promise<void>((resolve) => (wake = resolve));
      await Promise.race([delay(options.intervalMs, undefined, { signal: stop.signal }).catch(() => undefined), resized]);
    }
  } finally {
    output.off('resize', onResize);
    input.off('keypress', onKey);
    input.off('end', onKey);
    for (const listener of saved) input.on('keypress', listener);
    if (input.isTTY && !wasRaw) input.setRawMode(false);
    if (wasPaused) input.pause();
    if (liveOutput === output) restoreScreen();
  }
}

/** One frame as JSON: every job's report fields (no output), with its last line. */
export function frameJson(runtime: JobRuntime, rows: readonly WatchRow[], reports: readonly JobReport[]): Record<string, unknown> {
  const lastLines = new Map(rows.map((row) => [row.id, row.lastLine]));
  return {
    type: 'watch',
    at: Date.now(),
    running: rows.filter((row) => row.running).length,
    maxJobs: runtime.settings.maxJobs,
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
