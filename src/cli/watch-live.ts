/**
 * The live `watch` on a terminal, as `top` and `htop` do it: the table redrawn in place on the
 * terminal's alternate screen, the cursor hidden, keys read in raw mode, the screen given back as
 * it was. It has the keys to itself while it runs (keys.ts):
 *
 *   ↑ / ↓     select a job
 *   Enter     follow its output (as `logs -f`); any key (Ctrl-C too) returns to the table
 *   k         stop it, after asking (one key: y stops it, anything else does not)
 *   q, Esc, Ctrl-C, Ctrl-D   leave
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { JobReport } from '../reports/report.js';
import type { Palette } from './colour.js';
import { readJobOutput, textSink } from './follow.js';
import { isInterrupt, isTyping, takeKeys, type Key } from './keys.js';
import { clip, collectRows, renderWatch, title, type WatchOptions, type WatchRow } from './watch.js';

// Alternate screen on, cursor hidden / cursor shown, alternate screen off (xterm, and every
// terminal emulator in use since).
const ENTER_SCREEN = '\x1b[?1049h\x1b[?25l';
const LEAVE_SCREEN = '\x1b[?25h\x1b[?1049l';
const HOME = '\x1b[H';
const CLEAR_LINE_RIGHT = '\x1b[K';
const CLEAR_BELOW = '\x1b[J';

/** What stopping a job answers: its final report, or why not (the tools' result has this shape). */
export interface StopAnswer {
  isError: boolean;
  text: string;
  job?: JobReport;
}

export interface LiveWatchOptions extends WatchOptions {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
  /** What q does, for the footer: `returns to the shell`, `quits: every job is stopped`. */
  leave: string;
  /** Stops a job the user chose (k, then y), as the user's own stop. */
  stop(id: number): Promise<StopAnswer>;
  palette: Palette;
}

/** The terminal a live watch has taken over, if one is running (see restoreScreen). */
let liveOutput: NodeJS.WriteStream | null = null;

/** Gives the terminal back (normal screen, cursor shown) if a live watch has it: for an exit by signal. */
export function restoreScreen(): void {
  liveOutput?.write(LEAVE_SCREEN);
  liveOutput = null;
}

/**
 * The first line of an answer, for a one-line message under the table (whose footer lines are one
 * line each) or on stderr. Display only: `isError`, not this text, says whether it was a refusal.
 */
export function firstLine(text: string): string {
  const end = text.indexOf('\n');
  return end === -1 ? text : text.slice(0, end);
}

/** Runs the live table until the user leaves (or the input ends). */
export async function watchLive(options: LiveWatchOptions): Promise<void> {
  const { runtime, input, output, palette } = options;
  const leave = new AbortController();
  let rows: WatchRow[] = [];
  let selectedId: number | null = null;
  /** The job `k` asks about, until answered. */
  let asking: WatchRow | null = null;
  /** The job Enter asked to follow, until the loop takes it up. */
  let toFollow: number | null = null;
  /** Ends the output view (any key). */
  let following: AbortController | null = null;
  /** One line under the table: what the last stop did. */
  let message: string | null = null;
  /** Ends the pause between two frames: for a follow to start, or to leave. */
  let wake: () => void = () => undefined;
  /** Draws the table again now, with the rows already read (a key moved the selection, a stop answered). */
  const redraw = () => {
    if (following === null && toFollow === null && !leave.signal.aborted) draw();
  };

  const selectedRow = () => rows.find((row) => row.id === selectedId) ?? null;
  const move = (step: number) => {
    if (rows.length === 0) return;
    const at = rows.findIndex((row) => row.id === selectedId);
    const next = Math.max(0, Math.min(rows.length - 1, (at === -1 ? 0 : at) + step));
    selectedId = rows[next]!.id;
  };

  async function stopJob(row: WatchRow): Promise<void> {
    message = `stopping job ${row.id} (${row.command})…`;
    redraw();
    try {
      const answer = await options.stop(row.id);
      message = answer.job ? answer.job.header : firstLine(answer.text);
    } catch (error) {
      message = (error as Error).message;
    }
    redraw();
  }

  const onKey = (key: Key) => {
    if (following) {
      following.abort();
      return;
    }
    if (asking) {
      const row = asking;
      if (key.name === 'y' && !key.ctrl && !key.meta) {
        asking = null;
        void stopJob(row);
      } else if (isTyping(key) || isInterrupt(key) || key.name === 'escape') {
        asking = null;
        message = `job ${row.id} was not stopped`;
      }
      redraw();
      return;
    }
    if (isInterrupt(key) || key.name === 'q' || key.name === 'escape') leave.abort();
    else if (key.name === 'up') move(-1);
    else if (key.name === 'down') move(1);
    else if ((key.name === 'return' || key.name === 'enter') && selectedRow()) toFollow = selectedId;
    else if (key.name === 'k' && !key.ctrl && selectedRow()) {
      asking = selectedRow();
      message = null;
    }
    if (leave.signal.aborted || toFollow !== null) wake();
    else redraw();
  };
  const onEnd = () => {
    leave.abort();
    following?.abort();
    wake();
  };

  /** The job's output, live, until a key (or the input's end). */
  async function followView(id: number): Promise<void> {
    const view = new AbortController();
    following = view;
    const row = rows.find((candidate) => candidate.id === id);
    const around = [`job ${id} · `, ' · its output as it comes · any key returns to the table'];
    const room = Math.max(8, (output.columns || 80) - around.join('').length);
    output.write(`${HOME}${CLEAR_BELOW}${palette.dim(`${around[0]}${clip(row?.command ?? '', room)}${around[1]}`)}\n`);
    const sink = textSink({ out: output, err: output, palette, redraw: true });
    try {
      const final = await readJobOutput({ runtime, id, sink, follow: true, signal: view.signal });
      if (final) output.write(`${palette.dim(`${final.header} · any key returns to the table`)}\n`);
    } catch (error) {
      output.write(`${(error as Error).message} · any key returns to the table\n`);
    }
    if (!view.signal.aborted) await new Promise<void>((resolve) => view.signal.addEventListener('abort', () => resolve(), { once: true }));
    following = null;
  }

  function draw(): void {
    const footer = [...(options.notes ?? [])];
    if (message !== null) footer.push(message);
    footer.push(
      asking
        ? `stop job ${asking.id}? y stops it, any other key does not · ${asking.command}`
        : `↑↓ select · Enter follows its output · k stops it · q ${options.leave}`,
    );
    const view = { title: title(runtime, rows), rows, empty: options.empty, footer };
    const lines = renderWatch(view, output.columns || 80, output.rows || undefined, { palette, selectedId });
    output.write(HOME + lines.map((text) => text + CLEAR_LINE_RIGHT).join('\r\n') + CLEAR_BELOW);
  }

  const release = takeKeys(input, onKey, onEnd);
  output.on('resize', redraw);
  output.write(ENTER_SCREEN);
  liveOutput = output;
  try {
    while (!leave.signal.aborted) {
      if (toFollow !== null) {
        const id = toFollow;
        toFollow = null;
        await followView(id);
        continue;
      }
      const woken = new Promise<void>((resolve) => (wake = resolve));
      rows = await collectRows(runtime);
      if (leave.signal.aborted) break;
      if (selectedRow() === null) selectedId = rows[0]?.id ?? null;
      draw();
      await Promise.race([delay(options.intervalMs, undefined, { signal: leave.signal }).catch(() => undefined), woken]);
    }
  } finally {
    output.off('resize', redraw);
    release();
    if (liveOutput === output) restoreScreen();
  }
}
