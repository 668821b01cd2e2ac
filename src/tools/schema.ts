/**
 * The tools' input schemas and descriptions, as the model sees them: all in this one file.
 *
 * To give `background` another option (`stdin`, `merge`, `wait`, `until`, `timeout`, ...), add its
 * property to `backgroundProperties` below and its field to `BackgroundToolInput`. Every validated
 * field other than `command` and `locks` is passed as it is to `JobRuntime.background`, so the
 * property name must be the `BackgroundInput` field name.
 */
import { MAX_RESOURCE_LENGTH } from '../locks/index.js';
import { MAX_COMMAND_BYTES } from '../runtime/options.js';
import { MAX_PATTERN_CHARS } from '../protocol/pattern.js';
import type { JsonSchema } from './validate.js';

export interface BackgroundToolInput {
  command: string;
  locks?: string[];
  stdin?: boolean;
  merge?: boolean;
  timeout?: number;
  wait?: number;
  until?: string;
}

export interface JobStatusToolInput {
  id?: number;
  lines?: number;
  since?: number;
  max_bytes?: number;
  wait?: number;
  until?: string;
}

export interface JobKillToolInput {
  id: number;
  signal?: 'INT' | 'TERM' | 'KILL';
  grace?: number;
}

export interface JobInputToolInput {
  id: number;
  text?: string;
  close?: boolean;
}

export interface JobRestartToolInput {
  id: number;
}

/** Longest wait a call may ask for, in seconds (a tool call should not hang for long). */
export const MAX_WAIT_SECONDS = 600;
/** Longest per-job timeout, in seconds (a week). */
export const MAX_TIMEOUT_SECONDS = 7 * 24 * 3600;
/** Largest byte bound of one read (the peer system's maximum). */
export const MAX_READ_BYTES = 65_536;
/** Largest text one job_input call writes. */
export const MAX_INPUT_BYTES = 1024 * 1024;

function waitProperties(what: string): Record<string, JsonSchema> {
  return {
    wait: {
      type: 'number',
      minimum: 0,
      maximum: MAX_WAIT_SECONDS,
      description: `Seconds to wait ${what} before answering: the answer comes as soon as the job ends (or, with "until", a new output line matches), else after this long. Saves polling. At most ${MAX_WAIT_SECONDS}.`,
    },
    until: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_PATTERN_CHARS,
      description:
        'A regular expression in RE2 syntax (as JavaScript\'s, without backreferences or lookaround); with "wait", answer as soon as an output line matches it (e.g. "ready|listening on").',
    },
  };
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
    stdin: {
      type: 'boolean',
      description: 'Keep a pipe to the job\'s stdin so job_input can write to it. Default: false (stdin is /dev/null).',
    },
    merge: {
      type: 'boolean',
      description: 'Read stdout and stderr as one interleaved stream (lines marked "> "). Default: false (stderr lines marked "! ").',
    },
    timeout: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: MAX_TIMEOUT_SECONDS,
      description: 'Stop the job (as job_kill does) after this many seconds. Default: no limit.',
    },
    ...waitProperties('for the job instead of the usual short moment (e.g. for a dev server\'s ready line)'),
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
        since: {
          type: 'integer',
          minimum: -1,
          maximum: MAX_JOB_ID,
          description: 'Read on from a cursor: only lines after this line number ("next" of the previous read; -1 from the start). The report says how many lines were dropped in between. Needs "id".',
        },
        max_bytes: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_READ_BYTES,
          description: `Bound on the output text this read returns, in bytes. Default and maximum: ${MAX_READ_BYTES}. Needs "id".`,
        },
        ...waitProperties('(needs "id")'),
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
      properties: {
        id: jobId('The job number that background returned.'),
        signal: {
          type: 'string',
          enum: ['INT', 'TERM', 'KILL'],
          description: 'TERM (default): SIGTERM to every process, a grace period, then SIGKILL. INT: SIGINT only (like Ctrl-C), no escalation; check with job_status. KILL: SIGKILL at once.',
        },
        grace: {
          type: 'number',
          minimum: 0,
          maximum: 600,
          description: 'Seconds between SIGTERM and SIGKILL (with TERM), or how long to wait for the job to end (with INT). Default: 2.',
        },
      },
      required: ['id'],
      additionalProperties: false,
      examples: [{ id: 0 }, { id: 0, signal: 'INT' }],
    },
  };
}

export function jobInputSchema(): { description: string; inputSchema: JsonSchema } {
  return {
    description:
      'Write text to the stdin of a job started with "stdin": true (include "\\n" to end a line), and/or close its stdin ' +
      '(a tool that reads to end of input then finishes). Returns the job report.',
    inputSchema: {
      type: 'object',
      properties: {
        id: jobId('The job number that background returned.'),
        text: { type: 'string', maxLength: MAX_INPUT_BYTES, description: 'Text to write, exactly as given.' },
        close: { type: 'boolean', description: 'Close the job\'s stdin after writing. Default: false.' },
      },
      required: ['id'],
      additionalProperties: false,
      examples: [{ id: 0, text: 'yes\n' }, { id: 0, close: true }],
    },
  };
}

export function jobRestartSchema(): { description: string; inputSchema: JsonSchema } {
  return {
    description:
      'Stop a job (as job_kill does) and start its command again with the same options, as a new job number. ' +
      'Returns the new job\'s report.',
    inputSchema: {
      type: 'object',
      properties: { id: jobId('The job number to restart.') },
      required: ['id'],
      additionalProperties: false,
      examples: [{ id: 0 }],
    },
  };
}
