/**
 * The tools' words: permission patterns, input problems, approvals, and the tools' own
 * configuration errors.
 */
import { describeValue } from '../protocol/describe.js';
import type { JsonSchema, LockResourceFacts } from '../facts.js';
import { asJson, didNot, idArg, messageOf, sentence } from './common.js';
import { formatResource } from './locks.js';

/** `background(npm run dev)`: the exact string an approval "always" remembers. */
export function permissionPattern(tool: string, subject: string): string {
  return `${tool}(${subject})`;
}

/** What a job_input call does, for its permission pattern: `sh -i <- "ls\n"`, `sh -i <- "y\n" + EOF`, `sh -i <- EOF`. */
export function inputSubject(command: string, text: string, close: boolean): string {
  const written = text === '' && close ? 'EOF' : `${JSON.stringify(text)}${close ? ' + EOF' : ''}`;
  return `${command} <- ${written}`;
}

/** A tool call as the lock table names its holder: `job_status {"id": 0}`, `job_status {}`. */
export function callLabel(tool: string, id?: number): string {
  return id === undefined ? `${tool} {}` : `${tool} ${idArg(id)}`;
}

function article(noun: string): string {
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

/** "a string of 1 to 9 characters" → "strings of 1 to 9 characters". */
function pluralPhrase(phrase: string): string {
  return phrase.replace(/^(?:a|an) (\w+)/, (_, noun: string) => `${noun}s`);
}

/** What a schema accepts, as words: "a whole number from 0 to 2000", "an array of at most 32 strings". */
export function expectation(schema: JsonSchema): string {
  switch (schema.type) {
    case 'string': {
      if (schema.enum) return `one of ${schema.enum.map((value) => JSON.stringify(value)).join(', ')}`;
      const { minLength: min, maxLength: max } = schema;
      if (min !== undefined && min > 0 && max !== undefined) return `a string of ${min} to ${max} characters`;
      if (min !== undefined && min > 0) return `a non-empty string`;
      if (max !== undefined) return `a string of at most ${max} characters`;
      return 'a string';
    }
    case 'integer':
    case 'number': {
      const noun = schema.type === 'integer' ? 'whole number' : 'number';
      const { minimum: min, maximum: max, exclusiveMinimum: above } = schema;
      if (above !== undefined && max !== undefined) return `${article(noun)} above ${above} and up to ${max}`;
      if (above !== undefined) return `${article(noun)} above ${above}`;
      if (min !== undefined && max !== undefined) return `${article(noun)} from ${min} to ${max}`;
      if (min !== undefined) return `${article(noun)} from ${min} up`;
      if (max !== undefined) return `${article(noun)} up to ${max}`;
      return article(noun);
    }
    case 'boolean':
      return 'true or false';
    case 'array': {
      const item = schema.items ? pluralPhrase(expectation(schema.items)) : 'values';
      if (schema.maxItems !== undefined) return `an array of at most ${schema.maxItems} ${item}`;
      return `an array of ${item}`;
    }
    case 'object':
      return 'a JSON object';
    default:
      return 'any value';
  }
}

/** The accepted shape of an object schema in one line: `{"id"?: whole number, "lines"?: ...}`. */
export function describeAccepted(schema: JsonSchema): string {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const shape = expectation(property).replace(/^(?:a|an) /, '');
    return `${JSON.stringify(name)}${required.has(name) ? '' : '?'}: ${shape}`;
  });
  return `{${fields.join(', ')}}`;
}

/** A value the schema does not accept. `name` is the field's path, or `the input`. */
export function notAccepted(name: string, schema: JsonSchema, value: unknown): string {
  return `${name} must be ${expectation(schema)}; received ${describeValue(value, 'spoken')}`;
}

/** A field the schema does not know. `path` is the object's path, '' for the input itself. */
export function unknownField(path: string, key: string, accepted: readonly string[]): string {
  const fields = accepted.map((field) => JSON.stringify(field)).join(', ');
  return `${path === '' ? '' : `${path}: `}unknown field ${JSON.stringify(key)} (the accepted fields are ${fields || 'none'})`;
}

export function missingField(path: string): string {
  return `${path} is required and missing`;
}

/** JSON on one line, spaced as the reports write it: `{"id": 0, "locks": ["port:5173"]}`. */
export function inlineJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inlineJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${inlineJson(item)}`).join(', ')}}`;
  }
  return asJson(value);
}

/**
 * Input the schema refuses, in one sentence: the field and its rule (the problem says both). The
 * schema is not repeated, as the model has it already; only an input that is not an object at all
 * gets an example call.
 */
export function badInput(tool: string, problem: string, schema: JsonSchema): string {
  const example = problem.startsWith('the input ') ? schema.examples?.[1] ?? schema.examples?.[0] : undefined;
  const shown = example === undefined ? '' : ` For example: ${tool} ${inlineJson(example)}.`;
  return `${tool}: bad input: ${problem}.${shown} Nothing was run.`;
}

/** Input the schema accepts but the runtime would refuse (a blank command, a NUL byte): said before anyone is asked. */
export function refusedInput(tool: string, problem: string): string {
  return `${tool}: bad input: ${sentence(problem)} Nothing was run.`;
}

export function linesWithoutId(): string {
  return 'job_status: bad input: "lines" needs an "id" (it says how many lines of that job to show). Use {"id": 0, "lines": 200} for one job, or {} to list every job.';
}

/** `/job-kill` followed by something that is not a job number. */
export function notAJobNumber(raw: unknown): string {
  return `/job-kill: ${asJson(raw)} is not a job number; use /job-kill followed by the number job_status shows, e.g. /job-kill 0.`;
}

/** Nothing to approve with: level-2 tools are refused. */
export function noApprover(tool: string, pattern: string): string {
  return (
    `${tool} is refused: ${pattern} needs the user's approval, and this host has no approver configured, ` +
    `so nothing was ${didNot(tool)}. (Host: pass an approve function, createTools(runtime, { approve }), to ask the user.)`
  );
}

export function denied(tool: string, pattern: string): string {
  return `The user denied ${pattern}; nothing was ${didNot(tool)}. Do not repeat this call; ask the user what to do instead.`;
}

export function approverFailed(tool: string, pattern: string, error: unknown): string {
  return `${tool} is refused: asking the user to approve ${pattern} failed (${messageOf(error)}), so nothing was ${didNot(tool)}.`;
}

export function badApproverAnswer(tool: string, pattern: string, answer: unknown): string {
  return (
    `${tool} is refused: the approver answered ${asJson(answer)} for ${pattern}, which is not ` +
    `"once", "always" or "deny"; it counts as a denial, so nothing was ${didNot(tool)}.`
  );
}

/**
 * job_status / job_kill whose own rules overlap what the target holds, or, while it still waits
 * for its locks, what it waits for: fail at once. In each conflict, `a` is the tool's resource and
 * `b` the target's.
 */
export function selfDeadlock(
  tool: string,
  job: { id: number; command: string },
  conflicts: readonly { a: LockResourceFacts; b: LockResourceFacts }[],
  waiting = false,
): string {
  const names = (side: 'a' | 'b') => [...new Set(conflicts.map((conflict) => formatResource(conflict[side])))].join(', ');
  const target = `job ${job.id} (${job.command})`;
  const claim = waiting ? `is waiting for ${names('b')} and will hold it until it has ended` : `holds ${names('b')} until it has ended`;
  return (
    `${tool} cannot run: its lock rules need ${names('a')}, and ${target} ${claim}, ` +
    `so this call would wait on its own target. Nothing was ${didNot(tool)}. ` +
    `Ask the user to run /job-kill ${job.id}, which stops the job without waiting for any lock.`
  );
}

/** createTools was configured with something it cannot use (a host's mistake, thrown at once). */
export const toolsConfig = {
  notAnObject: (value: unknown) => `createTools options must be an object; received ${typeof value}`,
  badApprover: (value: unknown) =>
    `createTools option approve must be a function (request) => Promise<"once" | "always" | "deny">; received ${typeof value}`,
  contextNotAnObject: (name: string, value: unknown) => `${name} must be an object { cwd?, env?, ref? }; received ${value === null ? 'null' : typeof value}`,
  badCwd: (name: string, value: unknown) => `${name}.cwd must be a string (a directory); received ${typeof value}`,
  badEnv: (name: string, value: unknown) => `${name}.env must be an object of strings; received ${typeof value}`,
  badRef: (name: string, value: unknown) => `${name}.ref must be a string; received ${typeof value}`,
  badFlavor: (value: unknown, flavors: readonly string[]) =>
    `tools.definitions flavor must be one of ${flavors.map((flavor) => JSON.stringify(flavor)).join(', ')}; received ${describeValue(value, 'spoken')}`,
  badReads: (value: unknown) => `createTools option reads must be "tail" or "new"; received ${describeValue(value, 'spoken')}`,
};

/** An adapter (src/adapters/) was configured with something it cannot use, or a call went wrong. */
export const adapterConfig = {
  badMaxWait: (value: unknown) => `maxWaitMs must be a whole number of milliseconds, 0 or more; received ${describeValue(value, 'spoken')}`,
  badStrict: (value: unknown) => `strict must be true or false; received ${describeValue(value, 'spoken')}`,
  badKillSignal: (value: unknown) => `killSignal must be "KILL" or "TERM"; received ${describeValue(value, 'spoken')}`,
  badApprovals: (value: unknown) => `approvals must be "interruptions" or "approver"; received ${describeValue(value, 'spoken')}`,
  badAnswer: (value: unknown) => `the answer must be "once", "always" or "deny"; received ${describeValue(value, 'spoken')}`,
  /** A level-2 call the agent run never asked about (it named no job when the run checked approvals). */
  notAskedByRun: () => 'the run did not ask about this call; call it again to be asked',
  /** A level-2 call Claude Code ran without its permission step (the tool was in allowedTools, or the call came from elsewhere). */
  notAskedByClaude: () => "Claude Code did not ask the host's canUseTool about this call (keep the level-2 tools out of allowedTools)",
  badClaudeApprovals: (value: unknown) => `approvals must be "approver" or "canUseTool"; received ${describeValue(value, 'spoken')}`,
  approveWithCanUseTool: () => "approve is not asked with approvals: 'canUseTool' (the host's canUseTool is); pass one or the other",
  badCanUseTool: (value: unknown) => `canUseTool takes the host's canUseTool function; received ${describeValue(value, 'spoken')}`,
  /** The AI SDK ran a level-2 call unasked, and the host gave no approver to ask instead. */
  notAskedBySdk: () => "the AI SDK ran it without asking (keep the tools' needsApproval, or pass toolApproval), and the host has no approve function",
  badTimeout: (value: unknown) => `timeoutMs must be a whole number of milliseconds, 1 or more; received ${describeValue(value, 'spoken')}`,
  badMaxOutput: (value: unknown) => `maxOutputLength must be a positive whole number; received ${describeValue(value, 'spoken')}`,
  jobGone: () => 'the job is gone: the runtime no longer knows it',
  fault: (tool: string, error: unknown) => `${tool} failed unexpectedly: ${error instanceof Error ? error.message : String(error)}`,
};

/** A progress message while a call waits (an MCP request that carries a progress token). */
export function stillWaiting(tool: string, id: unknown, elapsedMs: number): string {
  const call = typeof id === 'number' ? callLabel(tool, id) : tool;
  return `${call}: waiting, ${(elapsedMs / 1000).toFixed(1)}s so far`;
}
