/**
 * The shell's `logs [-f] ID`: a job's output as the job wrote it (no report around it), as
 * `docker logs` shows a container's: every line still kept, stdout lines on stdout and stderr lines
 * on stderr (red on a terminal); with `-f` (`--follow`), then each new line as it comes, until the
 * job has ended or Ctrl-C. With `--json`, one object per line instead.
 */
import type { OutputLine } from '../protocol/messages.js';
import type { JobReport } from '../reports/report.js';
import { colourWanted, COLOUR, NO_COLOUR } from './colour.js';
import { readJobOutput, textSink, type FollowRuntime, type OutputSink } from './follow.js';
import { isInterrupt, takeKeys } from './keys.js';
import { tokenize } from './tokenize.js';

export const LOGS_USAGE = 'logs [-f] ID';

export type LogsArgs = { ok: true; id: number; follow: boolean } | { ok: false; problem: string };

/** `-f 3`, `3 --follow`, `3`. */
export function parseLogsArgs(rest: string): LogsArgs {
  let id: number | null = null;
  let follow = false;
  const fail = (problem: string): LogsArgs => ({ ok: false, problem: `logs: ${problem}; usage: ${LOGS_USAGE}` });
  for (const token of tokenize(rest)) {
    if (token.error) return fail(token.error);
    if (!token.quoted && (token.value === '-f' || token.value === '--follow')) follow = true;
    else if (/^\d+$/.test(token.value) && id === null) id = Number(token.value);
    else if (token.value.startsWith('-') && !token.quoted) return fail(`unknown flag ${token.value} (its only flag is -f, --follow)`);
    else return fail(id === null ? `a job number (a whole number from 0 up) comes here; received ${JSON.stringify(token.value)}` : `unexpected argument ${JSON.stringify(token.value)}`);
  }
  if (id === null) return fail('which job? give its number');
  return { ok: true, id, follow };
}

/** One JSON object per line of output (and per gap). */
function jsonSink(id: number, emit: (value: Record<string, unknown>) => void): OutputSink {
  const line = (entry: OutputLine) => emit({ type: 'log', id, seq: entry.seq, stream: entry.stream, text: entry.text, ...(entry.partial ? { partial: true } : {}) });
  return { line, partial: () => undefined, gap: (count) => emit({ type: 'gap', id, lines: count }) };
}

export interface LogsOptions {
  runtime: FollowRuntime;
  id: number;
  follow: boolean;
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
  errors: NodeJS.WriteStream;
  /** Set for `--json`: where the objects go. */
  emit?: (value: Record<string, unknown>) => void;
  /** Stops following (the shell's Ctrl-C). */
  signal: AbortSignal;
}

/**
 * Prints the job's output; resolves with its last report (null when stopped). On a terminal,
 * following has the keys: Ctrl-C (or Ctrl-D) stops it, other keys are ignored.
 */
export async function runLogs(options: LogsOptions): Promise<JobReport | null> {
  const { runtime, id, follow, input, output, errors, emit } = options;
  const colour = colourWanted(output) && colourWanted(errors);
  const sink = emit
    ? jsonSink(id, emit)
    : textSink({ out: output, err: errors, palette: colour ? COLOUR : NO_COLOUR, redraw: output.isTTY === true });
  const stop = new AbortController();
  const signal = AbortSignal.any([options.signal, stop.signal]);
  const interrupted = () => {
    if (!stop.signal.aborted) output.write('^C\n');
    stop.abort();
  };
  const release = follow && input.isTTY ? takeKeys(input, (key) => isInterrupt(key) && interrupted(), interrupted) : () => undefined;
  try {
    const final = await readJobOutput({ runtime, id, sink, follow, signal });
    // Followed to its end: how it ended.
    if (final && follow && final.state !== 'running' && final.state !== 'waiting') {
      if (emit) emit({ type: 'logs-end', id, state: final.state, exitCode: final.exitCode, signal: final.signal });
      else output.write(`${(colour ? COLOUR : NO_COLOUR).dim(`(${final.header})`)}\n`);
    }
    return final;
  } finally {
    release();
  }
}
