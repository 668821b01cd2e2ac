/**
 * Validation of what a caller gives background(): the command, its environment, a wait pattern.
 * Each failure says what was wrong and what is accepted.
 */
import { InvalidInputError } from '../protocol/errors.js';
import { describe, MAX_COMMAND_BYTES } from './options.js';

/** A model's regular expression: a string (its source) or a RegExp, checked to compile. */
export function compilePattern(pattern: RegExp | string): RegExp {
  if (pattern instanceof RegExp) return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > 1000) {
    throw new InvalidInputError(`until must be a regular expression of 1 to 1000 characters; received ${describe(pattern)}`);
  }
  try {
    return new RegExp(pattern);
  } catch (error) {
    throw new InvalidInputError(`until is not a valid regular expression: ${(error as Error).message}`);
  }
}

export function validateCommand(command: unknown): string {
  if (typeof command !== 'string') {
    throw new InvalidInputError(`command must be a string (a shell command line); received ${describe(command)}`);
  }
  if (command.trim().length === 0) throw new InvalidInputError('command is empty; give the shell command line to run, e.g. "npm run dev"');
  if (command.includes('\0')) throw new InvalidInputError('command contains a NUL byte, which no shell command can contain');
  const bytes = Buffer.byteLength(command);
  if (bytes > MAX_COMMAND_BYTES) {
    throw new InvalidInputError(`command is ${bytes} bytes; at most ${MAX_COMMAND_BYTES} bytes are accepted (put a long script in a file and run that)`);
  }
  return command;
}

export function envEntries(env: NodeJS.ProcessEnv): string[] {
  if (typeof env !== 'object' || env === null) throw new InvalidInputError(`env must be an object of strings; received ${describe(env)}`);
  const entries: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new InvalidInputError(`env.${key} must be a string; received ${describe(value)}`);
    if (key.length === 0 || key.includes('=') || key.includes('\0') || value.includes('\0')) {
      throw new InvalidInputError(`env entry ${JSON.stringify(key)} is invalid: names must be non-empty without "=" or NUL, values without NUL`);
    }
    if (key === 'HEPH_JOB') continue; // ours: set per job by the supervisor
    entries.push(`${key}=${value}`);
  }
  return entries;
}

