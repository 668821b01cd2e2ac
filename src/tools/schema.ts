/**
 * The tools' input schemas and descriptions, as the model sees them: all in this one file.
 *
 * Each tool has two schemas from one source: `check`, what the validator enforces (bounds, and
 * `examples` for the bad-input answers), and `inputSchema`, what a model is shown: the common core
 * of JSON Schema every API accepts (src/tools/flavors.ts), with the bounds a model should know said
 * in the descriptions. Descriptions say only what changes a call: they are sent with every request.
 *
 * To give `background` another option (`stdin`, `merge`, `wait`, `until`, `timeout`, ...), add its
 * property to `backgroundProperties` below and its field to `BackgroundToolInput`. Every validated
 * field other than `command` and `locks` is passed as it is to `JobRuntime.background`, so the
 * property name must be the `BackgroundInput` field name.
 */
import { MAX_RESOURCE_LENGTH } from '../locks/index.js';
import { MAX_COMMAND_BYTES } from '../runtime/options.js';
import { MAX_PATTERN_CHARS } from '../protocol/pattern.js';
import { TERMINAL_COLUMNS, TERMINAL_ROWS } from '../protocol/terminal.js';
import { coreSchema } from './flavors.js';
import type { JsonSchema } from '../facts.js';

export interface BackgroundToolInput {
  command: string;
  locks?: string[];
  stdin?: boolean;
  merge?: boolean;
  tty?: boolean;
  timeout?: number;
  wait?: number;
  until?: string;
  until_port?: number;
  notify?: string;
}

export interface JobStatusToolInput {
  id?: number;
  lines?: number;
  since?: number;
  max_bytes?: number;
  wait?: number;
  until?: string;
  until_port?: number;
  filter?: string;
  notify?: string;
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

function waitProperties(): Record<string, JsonSchema> {
  return {
    wait: {
      type: 'number',
      minimum: 0,
      maximum: MAX_WAIT_SECONDS,
      description: `Seconds to wait (max ${MAX_WAIT_SECONDS}) for the end, until or until_port.`,
    },
    until: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_PATTERN_CHARS,
      description: 'RE2 regex a new line must match, e.g. "ready".',
    },
    until_port: { type: 'integer', minimum: 1, maximum: 65_535, description: 'TCP port the job must listen on.' },
  };
}

/** `notify` in a tool's input: an RE2 pattern, or `port:N` (src/tools/notify.ts). */
function notifyProperty(description: string): JsonSchema {
  return { type: 'string', minLength: 1, maxLength: MAX_PATTERN_CHARS, description };
}

/** What the descriptions quote, from the runtime's settings. */
export interface SchemaLimits {
  maxJobs: number;
  outputLines: number;
}

/** A tool's description, the schema a model is shown, and the schema its input is checked against. */
export interface ToolSchema {
  description: string;
  /** The core of `check` (src/tools/flavors.ts): what every API accepts. */
  inputSchema: JsonSchema;
  /** What the validator enforces, with `examples` for the bad-input answers. */
  check: JsonSchema;
}

function toolSchema(description: string, check: JsonSchema): ToolSchema {
  return { description, inputSchema: coreSchema(check), check };
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
      description: 'Shell command, e.g. "npm run dev".',
    },
    locks: {
      type: 'array',
      maxItems: MAX_CALL_LOCKS,
      items: { type: 'string', minLength: 1, maxLength: MAX_RESOURCE_LENGTH },
      description: 'Held while it runs, e.g. ["port:5173"]; waits for all (within wait, default 30).',
    },
    stdin: { type: 'boolean', description: 'Keep stdin open for job_input.' },
    merge: { type: 'boolean', description: 'stdout and stderr as one stream.' },
    tty: { type: 'boolean', description: `On a ${TERMINAL_COLUMNS}x${TERMINAL_ROWS} terminal (prompts work).` },
    timeout: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: MAX_TIMEOUT_SECONDS,
      description: 'Stop the job after this many seconds.',
    },
    ...waitProperties(),
    notify: notifyProperty('Later answers tell of new lines matching this RE2 regex, or "port:N" once it listens.'),
  };
}

export function backgroundSchema(limits: SchemaLimits): ToolSchema {
  return toolSchema(
    'Run a long-running shell command (dev server, watcher) as a job. ' +
      `At most ${limits.maxJobs} jobs run at once. For a result you need now (tests, a build), use the shell tool.`,
    {
      type: 'object',
      properties: backgroundProperties(),
      required: ['command'],
      additionalProperties: false,
      examples: [{ command: 'npm run dev' }, { command: 'npm run dev', locks: ['port:5173'] }],
    },
  );
}

export function jobStatusSchema(limits: SchemaLimits): ToolSchema {
  return toolSchema(
    `A job's state and last output lines (the last ${limits.outputLines} are kept); without id, ` +
      'every job. Only reads.',
    {
      type: 'object',
      properties: {
        id: jobId('Job number; leave out to list jobs.'),
        lines: {
          type: 'integer',
          minimum: 0,
          maximum: MAX_LINES,
          description: `How many last lines to show. Default ${DEFAULT_LINES}.`,
        },
        since: {
          type: 'integer',
          minimum: -1,
          maximum: MAX_JOB_ID,
          description: 'Lines after this line number (-1: all); with lines: the first N.',
        },
        // Its length is checked with the pattern (patternProblem), in a sentence naming the field.
        filter: {
          type: 'string',
          description: 'Only lines matching this RE2 regex, numbered.',
        },
        max_bytes: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_READ_BYTES,
          description: `Max bytes returned (${MAX_READ_BYTES}).`,
        },
        ...waitProperties(),
        notify: notifyProperty("As background's notify."),
      },
      additionalProperties: false,
      examples: [{}, { id: 0 }, { id: 0, lines: 500 }],
    },
  );
}

export function jobKillSchema(): ToolSchema {
  return toolSchema('Stop a job and all the processes it started.', {
    type: 'object',
    properties: {
      id: jobId('Job number.'),
      signal: {
        type: 'string',
        enum: ['INT', 'TERM', 'KILL'],
        description: 'TERM (default): SIGTERM, grace, SIGKILL. INT: SIGINT only. KILL: at once.',
      },
      grace: {
        type: 'number',
        minimum: 0,
        maximum: 600,
        description: 'Seconds before SIGKILL (with INT: to wait for the end). Default 2.',
      },
    },
    required: ['id'],
    additionalProperties: false,
    examples: [{ id: 0 }, { id: 0, signal: 'INT' }],
  });
}

export function jobInputSchema(): ToolSchema {
  return toolSchema('Write to the stdin of a job started with "stdin" or "tty": true, and/or close it.', {
    type: 'object',
    properties: {
      id: jobId('Job number.'),
      text: { type: 'string', maxLength: MAX_INPUT_BYTES, description: 'Text to write; end a line with "\\n".' },
      close: { type: 'boolean', description: 'Close stdin after writing.' },
    },
    required: ['id'],
    additionalProperties: false,
    examples: [{ id: 0, text: 'yes\n' }, { id: 0, close: true }],
  });
}

export function jobRestartSchema(): ToolSchema {
  return toolSchema('Stop a job and run it again as a new job, same options.', {
    type: 'object',
    properties: { id: jobId('Job number.') },
    required: ['id'],
    additionalProperties: false,
    examples: [{ id: 0 }],
  });
}
