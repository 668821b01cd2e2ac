/**
 * The tools' input schemas and descriptions, as the model sees them: all in this one file.
 *
 * To give `background` another option (`stdin`, `merge`, `wait`, `until`, `timeout`, ...), add its
 * property to `backgroundProperties` below and its field to `BackgroundToolInput`. Every validated
 * field other than `command` and `locks` is passed as it is to `JobRuntime.background`, so the
 * property name must be the `BackgroundInput` field name.
 */
import { MAX_RESOURCE_LENGTH } from '../locks/index.js';
import { MAX_COMMAND_BYTES } from '../options.js';
import type { JsonSchema } from './validate.js';

export interface BackgroundToolInput {
  command: string;
  locks?: string[];
}

export interface JobStatusToolInput {
  id?: number;
  lines?: number;
}

export interface JobKillToolInput {
  id: number;
}

/** What the descriptions quote, from the runtime's settings. */
export interface SchemaLimits {
  maxJobs: number;
  outputLines: number;
}

/** Resources one call may add; the lock table has no limit, a model's request needs one. */
export const MAX_CALL_LOCKS = 32;
/** Job numbers are JavaScript integers. */
export const MAX_JOB_ID = Number.MAX_SAFE_INTEGER;
/** The tail shown when `lines` is not given (SPEC 5). */
export const DEFAULT_LINES = 50;
/** Same bound as `JobRuntime.status`; asking beyond what is kept only shows what is kept. */
export const MAX_LINES = 1_000_000;

function jobId(description: string): JsonSchema {
  return { type: 'integer', minimum: 0, maximum: MAX_JOB_ID, description };
}

function backgroundProperties(): Record<string, JsonSchema> {
  return {
    command: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_COMMAND_BYTES,
      description: 'The shell command line to run, exactly as you would type it, e.g. "npm run dev".',
    },
    locks: {
      type: 'array',
      maxItems: MAX_CALL_LOCKS,
      items: { type: 'string', minLength: 1, maxLength: MAX_RESOURCE_LENGTH },
      description:
        'Resources the job needs to itself while it runs, as "kind:value" strings, e.g. ["port:5173"] or ' +
        '["path:/repo/node_modules"]. The job waits until it can hold them all and keeps them until it has ' +
        'ended; other commands that need them wait meanwhile. Default: none.',
    },
  };
}

export function backgroundSchema(limits: SchemaLimits): { description: string; inputSchema: JsonSchema } {
  return {
    description:
      'Start a shell command that keeps running (a dev server, a file watcher, a long build) and get a job ' +
      'number back at once. The command runs through /bin/sh -c in the current worktree with the same ' +
      'environment as a shell command. The answer comes after a short moment and is the job report: ' +
      '`job <id> <state> <elapsed> <command>`, the output so far (`> ` stdout, `! ` stderr), and what to do ' +
      'next; a command that dies at once (command not found, a bad flag) is reported as exited with its ' +
      `output. Output is kept in memory (the last ${limits.outputLines} lines) and never streams into the ` +
      'conversation: read it with job_status. Stop the job and everything it started with job_kill. ' +
      `At most ${limits.maxJobs} jobs run at once. For a command that finishes by itself and whose result ` +
      'you need now (tests, a build), use the ordinary shell tool instead.',
    inputSchema: {
      type: 'object',
      properties: backgroundProperties(),
      required: ['command'],
      additionalProperties: false,
      examples: [{ command: 'npm run dev' }, { command: 'npm run dev', locks: ['port:5173'] }],
    },
  };
}

export function jobStatusSchema(limits: SchemaLimits): { description: string; inputSchema: JsonSchema } {
  return {
    description:
      'Read a background job: with an id, its state and the last lines of its output (50 unless you ask ' +
      `for more with "lines"; at most the last ${limits.outputLines} are kept); without an id, one line per ` +
      `job and how many of ${limits.maxJobs} are running. Only reads: it never stops or changes a job, and ` +
      'reading does not consume output. Finished jobs stay readable.',
    inputSchema: {
      type: 'object',
      properties: {
        id: jobId('The job number that background returned. Leave it out to list every job.'),
        lines: {
          type: 'integer',
          minimum: 0,
          maximum: MAX_LINES,
          description: `How many of the last output lines to show. Default: ${DEFAULT_LINES}. Needs "id".`,
        },
      },
      additionalProperties: false,
      examples: [{}, { id: 0 }, { id: 0, lines: 500 }],
    },
  };
}

export function jobKillSchema(): { description: string; inputSchema: JsonSchema } {
  return {
    description:
      'Stop a background job and every process it started (its children, and theirs, even those that ' +
      'detached): SIGTERM, a short grace period, then SIGKILL. Returns the final report with the last ' +
      'output; the output stays readable with job_status afterwards.',
    inputSchema: {
      type: 'object',
      properties: { id: jobId('The job number that background returned.') },
      required: ['id'],
      additionalProperties: false,
      examples: [{ id: 0 }],
    },
  };
}
