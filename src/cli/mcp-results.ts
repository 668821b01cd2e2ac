/**
 * A tool's answer as MCP returns it: the report text as the one content block. With `structured`
 * (`heph-jobs mcp --structured`), also the same answer as `structuredContent`, the report's facts
 * as data, which each tool's `outputSchema` describes (the SDK client checks one against the
 * other). Not by default: Claude Code and Codex hand their model `JSON.stringify(structuredContent)`
 * instead of the text when there is one, every newline escaped, and a client refuses a result
 * without it from a tool that declares an output schema. The output lines themselves are in
 * `text` only. A nullable field is an `anyOf` of its type and null, which every schema dialect of
 * the clients reads (a `type` array does not map onto Gemini's OpenAPI subset).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { JobListReport, JobReport } from '../reports/report.js';
import type { ToolResult } from '../tools/index.js';

type Schema = Record<string, unknown>;

const NULL: Schema = { type: 'null' };
const nullable = (type: string): Schema => ({ anyOf: [{ type }, NULL] });
const nullableObject = (schema: Schema): Schema => ({ anyOf: [{ type: 'object', ...schema }, NULL] });

/** A job's report as data: every field of JobReport but the output lines (those are in `text`). */
const JOB_SCHEMA: Schema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    state: { type: 'string', enum: ['waiting', 'running', 'exited', 'killed', 'failed', 'lost'] },
    exitCode: nullable('integer'),
    signal: nullable('string'),
    command: { type: 'string' },
    pid: nullable('integer'),
    header: { type: 'string', description: 'The first line of the report.' },
    startedAt: { type: 'number', description: 'Milliseconds since the epoch.' },
    endedAt: nullable('number'),
    elapsedMs: { type: 'number' },
    cleanedUp: { type: 'boolean', description: 'Every process of the job is gone.' },
    reason: nullable('string'),
    stats: nullableObject({
      properties: {
        procs: { type: 'integer' },
        memoryBytes: nullable('number'),
        cpuSeconds: nullable('number'),
        ports: { type: 'array', items: { type: 'integer' }, description: 'TCP ports the job listens on.' },
      },
    }),
    output: nullableObject({
      description: 'Counts of the read shown in text: lines kept in all, and the line number a read with "since" goes on from.',
      properties: { totalLines: { type: 'integer' }, shownLines: { type: 'integer' }, next: { type: 'integer' } },
    }),
    waited: nullableObject({
      properties: {
        kind: { type: 'string', enum: ['ended', 'matched', 'timed-out', 'listening'] },
        waitedMs: { type: 'number' },
        line: { type: 'string' },
        pattern: { type: 'string' },
        port: { type: 'integer' },
      },
      required: ['kind', 'waitedMs'],
    }),
    wants: {
      type: 'array',
      description: 'The locks a waiting job waits for.',
      items: { type: 'object', properties: { resource: { type: 'string' }, mode: { type: 'string', enum: ['exclusive', 'shared'] } }, required: ['resource', 'mode'] },
    },
    timedOutAfterMs: nullable('number'),
  },
  required: ['id', 'state', 'command', 'header'],
};

const TEXT: Schema = { type: 'string', description: 'The answer as the model reads it (the content block).' };
/** Lines about jobs that ended since the model last heard of them, when the tools give any. */
const NOTICES: Schema = { type: 'array', items: { type: 'string' } };
const LIST_SCHEMA: Schema = {
  type: 'object',
  properties: { jobs: { type: 'array', items: JOB_SCHEMA }, running: { type: 'integer' }, maxJobs: { type: 'integer' } },
  required: ['jobs', 'running', 'maxJobs'],
};

/** The `outputSchema` of tool `name`: the text, and the report(s) that tool answers with. */
export function outputSchema(name: string): { type: 'object'; [keyword: string]: unknown } {
  const reports: Record<string, Schema> = name === 'job_status' ? { job: JOB_SCHEMA, list: LIST_SCHEMA } : { job: JOB_SCHEMA };
  if (name === 'job_restart') reports.stopped = JOB_SCHEMA;
  return { type: 'object', properties: { text: TEXT, ...reports, notices: NOTICES }, required: ['text'] };
}

/** A report as `JOB_SCHEMA` describes it. */
function jobData(job: JobReport): Record<string, unknown> {
  const { output, text: _text, ...facts } = job;
  return {
    ...facts,
    output: output === null ? null : { totalLines: output.totalLines, shownLines: output.lines.length, next: output.next },
  };
}

function listData(list: JobListReport): Record<string, unknown> {
  return { jobs: list.jobs.map(jobData), running: list.running, maxJobs: list.maxJobs };
}

/** A notice as a tool result may carry it (createTools' notices of jobs that ended or started): its line. */
type NoticeLike = string | { text: string };

/**
 * The notices a result carries, as their lines (they also end `text`). Read through NoticeLike,
 * so that this holds whether the tools give notices or not.
 */
function noticeLines(result: ToolResult): { notices?: string[] } {
  const notices = (result as { notices?: readonly NoticeLike[] }).notices;
  if (!Array.isArray(notices) || notices.length === 0) return {};
  return { notices: notices.map((notice) => (typeof notice === 'string' ? notice : notice.text)) };
}

/** `result` as the MCP result: the text, and with `structured` the same as structured content. */
export function mcpResult(result: ToolResult, structured: boolean): CallToolResult {
  const text: CallToolResult = { content: [{ type: 'text', text: result.text }], ...(result.isError ? { isError: true } : {}) };
  return structured ? { ...text, structuredContent: structuredContent(result) } : text;
}

function structuredContent(result: ToolResult): Record<string, unknown> {
  return {
    text: result.text,
    ...(result.job ? { job: jobData(result.job) } : {}),
    ...(result.list ? { list: listData(result.list) } : {}),
    ...(result.stopped ? { stopped: jobData(result.stopped) } : {}),
    ...noticeLines(result),
  };
}
