/**
 * What `--json` writes: one object per line, tagged by `type`. An answer carries the tool's result
 * as data (the report or the list its text was made from, and whether it is a refusal), so a script
 * reads fields rather than the sentence.
 */
import type { JobReport } from '../reports/report.js';
import type { ToolResult } from '../tools/index.js';
import type { SessionEnd } from './session.js';

/**
 * A command's answer: the word typed, the tool it ran (or `/job-kill`), the input, the result, and
 * `text` as the shell writes it (its hints in the shell's commands; `job.text` is the model's).
 */
export function answerObject(command: string, tool: string, input: unknown, result: ToolResult, text = result.text): Record<string, unknown> {
  return {
    type: 'answer',
    command,
    tool,
    input,
    refused: result.isError,
    text,
    ...(result.job ? { job: result.job } : {}),
    ...(result.list ? { list: result.list } : {}),
    ...(result.notices ? { notices: result.notices } : {}),
  };
}

/** A `background` whose job waits for its locks, before its answer: the job's report (`wants`, `blockedBy`). */
export function waitingObject(job: JobReport): Record<string, unknown> {
  return { type: 'waiting', id: job.id, job };
}

/** A line that is not a command. */
export function errorObject(line: string, problem: string): Record<string, unknown> {
  return { type: 'error', line, error: problem };
}

export function helpObject(text: string): Record<string, unknown> {
  return { type: 'help', text };
}

/** The last line: how many jobs the end stopped, and every job's final report. */
export function endObject(end: SessionEnd, bySignal = false): Record<string, unknown> {
  return { type: 'end', stopped: end.stopped, jobs: end.jobs, ...(bySignal ? { signal: true } : {}) };
}
