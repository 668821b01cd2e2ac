/**
 * A tool's answer as data: the text the model reads and the report it was made from. The shell and
 * the MCP server read these fields; nobody parses the sentence back (STYLE 21).
 */
import { HephError } from '../protocol/errors.js';
import type { JobListReport, JobReport } from '../reports/report.js';
import { errorText } from '../wording/index.js';
import type { JobNoticeFacts } from '../facts.js';

/** A job event the model had not heard of, as told at the end of an answer: its facts (src/facts.ts) and its line. */
export interface JobNotice extends JobNoticeFacts {
  /** The line as the model reads it, e.g. `(job 2 exited 1 0:42 npm test: 37 new lines; job_status {"id": 2} reads them)`. */
  text: string;
}

export interface ToolResult {
  /** The answer exactly as the model reads it. */
  text: string;
  /** A refusal, a denial, bad input or an error: `text` says why nothing (or not all) was done. Not a report. */
  isError: boolean;
  /** The report `text` was made from. For job_restart, the started job's (its text follows the stopped job's header). */
  job?: JobReport;
  /** The list report of `job_status` without an id. */
  list?: JobListReport;
  /** job_restart: the stopped job's final report (its header comes first in `text`). */
  stopped?: JobReport;
  /** Jobs that ended (or started after waiting for their locks) since the model last heard of
   * them, told once each; their lines end `text`. Absent when there are none (or notices are off). */
  notices?: JobNotice[];
}

/** An answer that is not a report: why nothing (or not all) was done. */
export function refusal(text: string): ToolResult {
  return { text, isError: true };
}

/** An error from the runtime or the lock table, as the answer of `tool`. */
export function errorAnswer(tool: string, error: unknown): ToolResult {
  return refusal(errorText(tool, error, error instanceof HephError ? error : null));
}

/** A report of one job, as the answer. */
export function jobResult(job: JobReport): ToolResult {
  return { text: job.text, isError: false, job };
}

/** The list of every job, as the answer. */
export function listResult(list: JobListReport): ToolResult {
  return { text: list.text, isError: false, list };
}
