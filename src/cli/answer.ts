/**
 * What a tool's answer was, in structured form. The tools answer with text only; the CLI's `--json`
 * mode and the MCP server's `isError` need to know which report the text is. The tools run against a
 * recording view of the runtime that keeps every job report the runtime hands them, so the JSON
 * carries exactly the report the text was made from (not a second read that may already differ).
 */
import { buildListReport, type JobListReport, type JobReport } from '../reports/report.js';
import type { JobRuntime } from '../runtime.js';

export type Captured = { kind: 'job'; report: JobReport } | { kind: 'list'; reports: JobReport[] };

export interface RecordingRuntime {
  /** Use in place of the runtime: the same object, with every report it returns recorded. */
  runtime: JobRuntime;
  /** Everything recorded since the last call, oldest first; clears the record. */
  take(): Captured[];
}

function isReport(value: unknown): value is JobReport {
  if (value === null || typeof value !== 'object') return false;
  const record = value as Record<string, unknown>;
  return typeof record.id === 'number' && typeof record.header === 'string' && typeof record.text === 'string' && typeof record.state === 'string';
}

export function recordingRuntime(target: JobRuntime): RecordingRuntime {
  let captured: Captured[] = [];
  const note = (value: unknown): void => {
    if (isReport(value)) captured.push({ kind: 'job', report: value });
    else if (Array.isArray(value) && value.every(isReport)) captured.push({ kind: 'list', reports: value });
  };
  const runtime = new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(object, args);
        if (result instanceof Promise) {
          return result.then((resolved: unknown) => {
            note(resolved);
            return resolved;
          });
        }
        note(result);
        return result;
      };
    },
  });
  return {
    runtime,
    take() {
      const taken = captured;
      captured = [];
      return taken;
    },
  };
}

export interface Answer {
  /** The tool's text, exactly. */
  text: string;
  /** The job report the text shows, when it shows one. */
  job?: JobReport;
  /** The list the text shows (`job_status` without an id). */
  list?: JobListReport;
  /** The text is a refusal or an error (bad input, denied, no such job, limit reached...), not a report. */
  refused: boolean;
}

/**
 * Matches the tool's text to what the runtime returned during the call: the report whose text it is
 * (or, for a tool that words its own answer around a report, the last report whose header it shows),
 * or the list it is made from.
 */
export function classify(tool: string, text: string, captured: readonly Captured[], maxJobs: number): Answer {
  const jobs = captured.filter((entry): entry is Extract<Captured, { kind: 'job' }> => entry.kind === 'job').map((entry) => entry.report);
  const exact = [...jobs].reverse().find((report) => report.text === text);
  if (exact) return { text, job: exact, refused: false };
  for (const entry of [...captured].reverse()) {
    if (entry.kind !== 'list') continue;
    const list = buildListReport(entry.reports, maxJobs);
    if (list.text === text) return { text, list, refused: false };
  }
  const lines = new Set(text.split('\n'));
  const shown = [...jobs].reverse().find((report) => lines.has(report.header));
  if (shown) return { text, job: shown, refused: false };
  return { text, refused: looksRefused(tool, text) };
}

/** The tools' refusals and errors start with the tool's name (`background is refused: ...`,
 * `job_status: bad input: ...`) or say the user denied the call; reports start with `job N`. */
export function looksRefused(tool: string, text: string): boolean {
  return text.startsWith(`${tool}:`) || text.startsWith(`${tool} `) || text.startsWith('The user denied ');
}
