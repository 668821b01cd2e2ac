/**
 * `heph-jobs/ai` in whole agent loops of the real AI SDK (`generateText`, `streamText`) with the
 * SDK's own mock model (`ai/test`'s MockLanguageModelV4, scripted: each step answers from the tool
 * results its prompt holds):
 * - our tools: what the model read of each call is the text createTools gave (recorded by wrapping
 *   the definitions createTools returns), as an `error-text` output for refusals; level-2 calls
 *   are approved through the SDK (`toolApproval`, `needsApproval` and its approval requests
 *   answered with `respond()` or the SDK's own response), or by heph-jobs' approver in the call;
 *   `abortSignal` ends a wait with the job as it is; a job waiting for its locks is streamed as a
 *   preliminary result;
 * - the SandboxSession through generateText's `experimental_sandbox`, as the SDK documents a
 *   command tool (`experimental_sandbox.run()` / `.spawn()` in the tool's execute), and its
 *   process and file methods directly;
 * and nothing is left running (kernel truth: the FIFO every job process inherits reaches EOF, and
 * /proc holds no process with the run's HEPH_TEST_MARK), each oracle seen positive first.
 * `ai` 7 needs Node 22 or later: on older Node the file is skipped, saying so.
 */
import type { Recorded } from '../helpers/recorded-tools.js';
import { approver, marked, newOracle, nothingLeft } from '../helpers/adapter-runs.js';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ToolResult } from '../../src/index.js';
import type { HephJobsSandboxProcess } from '../../src/adapters/ai.js';
import { processesWithEnv, waitUntil } from '../helpers/kernel.js';
import { MODES, modeRows, type Mode } from '../helpers/modes.js';
import { uniquePort } from '../helpers/calls.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';

const MAJOR = Number(process.versions.node.split('.')[0]);
const TOO_OLD = MAJOR < 22;
const REASON = `ai 7 needs Node >= 22 (its engines field), and this is Node ${process.version}`;
if (TOO_OLD) console.warn(`test/adapters/ai: skipped: ${REASON}`);

const recorder = vi.hoisted(() => ({ calls: [] as Recorded[] }));
vi.mock('../../src/tools/index.js', async (importOriginal) =>
  (await import('../helpers/recorded-tools.js')).recordingTools(await importOriginal(), recorder.calls),
);

/** What the model read of one call, from the prompt of its next request. */
interface Read {
  tool: string;
  args: Record<string, unknown>;
  /** The output's type: `text`, `error-text`, `json`, `execution-denied`. */
  type: string;
  /** Its text (a json output's JSON; a denial's reason). */
  read: string;
}
type Call = { name: string; args: Record<string, unknown> };
type Step = (results: Read[]) => Call;

interface PromptPart {
  type: string;
  toolCallId?: string;
  toolName?: string;
  input?: unknown;
  output?: { type: string; value?: unknown; reason?: string };
}

const SERVER = path.join(FIXTURES, 'ready-server.mjs');
const USAGE = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 10, text: 10, reasoning: 0 } };
let nextCallId = 0;

afterEach(() => {
  recorder.calls.splice(0);
});

async function load() {
  const [ai, { MockLanguageModelV4, convertArrayToReadableStream }, zod, adapter] = await Promise.all([import('ai'), import('ai/test'), import('zod'), import('../../src/adapters/ai.js')]);
  return { ...ai, MockLanguageModelV4, convertArrayToReadableStream, z: zod.z, ...adapter };
}

/** The tool results a prompt holds, in order, with the call each answers. */
function resultsOf(prompt: readonly { role: string; content: unknown }[]): Read[] {
  const calls = new Map<string, { name: string; args: Record<string, unknown> }>();
  const results: Read[] = [];
  for (const message of prompt) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as PromptPart[]) {
      if (part.type === 'tool-call') calls.set(part.toolCallId!, { name: part.toolName!, args: (typeof part.input === 'string' ? JSON.parse(part.input) : part.input) as Record<string, unknown> });
      if (part.type === 'tool-result') {
        const call = calls.get(part.toolCallId!);
        const output = part.output!;
        const read = output.type === 'execution-denied' ? (output.reason ?? '') : typeof output.value === 'string' ? output.value : JSON.stringify(output.value);
        results.push({ tool: call?.name ?? part.toolName!, args: call?.args ?? {}, type: output.type, read });
      }
    }
  }
  return results;
}

/**
 * A scripted model: each request gets the next step's call (chosen from the results its prompt
 * holds, so the script is a function of what the model read), then a closing text. It answers
 * generateText (`doGenerate`) and streamText (`doStream`) alike.
 */
async function scriptedModel(steps: Step[]) {
  const { MockLanguageModelV4, convertArrayToReadableStream } = await load();
  const turns: Read[][] = [];
  const next = (prompt: unknown): { call: Call | null; id: string } => {
    const results = resultsOf(prompt as { role: string; content: unknown }[]);
    turns.push(results);
    return { call: results.length >= steps.length ? null : steps[results.length]!(results), id: `call_${nextCallId++}` };
  };
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      const { call, id } = next(options.prompt);
      if (call === null) return { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE, warnings: [] };
      return {
        content: [{ type: 'tool-call', toolCallId: id, toolName: call.name, input: JSON.stringify(call.args) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage: USAGE,
        warnings: [],
      };
    },
    doStream: async (options) => {
      const { call, id } = next(options.prompt);
      const parts =
        call === null
          ? [
              { type: 'text-start' as const, id: 't' },
              { type: 'text-delta' as const, id: 't', delta: 'Done.' },
              { type: 'text-end' as const, id: 't' },
              { type: 'finish' as const, finishReason: { unified: 'stop' as const, raw: 'stop' }, usage: USAGE },
            ]
          : [
              { type: 'tool-call' as const, toolCallId: id, toolName: call.name, input: JSON.stringify(call.args) },
              { type: 'finish' as const, finishReason: { unified: 'tool-calls' as const, raw: 'tool_use' }, usage: USAGE },
            ];
      return { stream: convertArrayToReadableStream([{ type: 'stream-start' as const, warnings: [] }, ...parts]) };
    },
  });
  return { model, turns, last: () => turns.at(-1) ?? [] };
}

async function setUp(mode: Mode, options: { approver?: boolean; deny?: string[]; rules?: Record<string, string[]> } = {}) {
  const { aiTools } = await load();
  const mark = randomUUID();
  const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
  const { approve, asked } = approver(options.deny);
  const heph = aiTools(runtime, {
    ...(options.approver === false ? {} : { approve }),
    ...(options.rules ? { rules: options.rules } : {}),
    defaults: { env: { ...process.env, HEPH_TEST_MARK: mark }, ref: 'main' },
  });
  return { mark, runtime, heph, asked };
}

/** Each result the model read is the text createTools gave, flagged as an error exactly when it was a refusal. */
function expectReadAsGiven(results: Read[], calls: Recorded[] = recorder.calls): void {
  expect(results.length).toBe(calls.length);
  for (const [i, result] of results.entries()) {
    const given = calls[i]!.result!;
    expect(result.read).toBe(given.text);
    expect(result.type, result.read).toBe(given.isError ? 'error-text' : 'text');
  }
}

/** The text a stream of bytes carries, read to its end. */
async function textOf(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

/** Reads `stream` until its text so far matches `pattern`, then lets go of it (the rest stays readable). */
async function readUntil(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (!pattern.test(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before ${pattern}; it held ${JSON.stringify(text)}`);
      text += decoder.decode(value, { stream: true });
    }
    return text;
  } finally {
    reader.releaseLock();
  }
}

describe.skipIf(TOO_OLD).each(modeRows())('the AI SDK adapter in an agent loop (%s)', (mode, skip) => {
  it.skipIf(skip)("our tools: starts a server, waits for its ready line, reads it, kills it; the model reads each text as createTools gave it; level-2 calls approved through toolApproval", async () => {
    const { generateText, isStepCount } = await load();
    const { mark, heph, asked } = await setUp(mode);
    const oracle = newOracle();
    const command = `${oracle.prefix}exec ${JSON.stringify(process.execPath)} ${SERVER}`;
    let whileRunning: { processes: string[]; eof: boolean } | null = null;
    const { model, turns, last } = await scriptedModel([
      () => ({ name: 'background', args: { command, until: '^ready on port', wait: 30 } }),
      () => {
        whileRunning = { processes: marked(mark), eof: oracle.closed };
        return { name: 'job_status', args: { id: 0 } };
      },
      () => ({ name: 'job_kill', args: { id: 0 } }),
    ]);
    const answer = await generateText({ model, tools: heph.tools, toolApproval: heph.toolApproval, stopWhen: isStepCount(10), prompt: 'Start the server, read it, stop it.' });
    expect(answer.text).toBe('Done.');
    await nothingLeft(oracle, mark);

    // Negative control of both oracles: while the job ran they saw it.
    expect(whileRunning).not.toBeNull();
    expect(whileRunning!.eof).toBe(false);
    expect(whileRunning!.processes.some((cmd) => cmd.includes('ready-server.mjs')), whileRunning!.processes.join('\n')).toBe(true);

    const results = last();
    expect(results.map((r) => r.tool)).toEqual(['background', 'job_status', 'job_kill']);
    expect(recorder.calls.map((c) => c.name)).toEqual(['background', 'job_status', 'job_kill']);
    expectReadAsGiven(results);
    const [background, status, kill] = results.map((r) => r.read);
    expect(background).toMatch(/^job 0 running /);
    expect(background).toMatch(/\n> ready on port \d+\n/);
    expect(status).toMatch(/^job 0 running [\s\S]*\n> ready on port \d+\n/);
    expect(kill).toMatch(/^job 0 killed SIGTERM /);

    // heph-jobs' approver was asked once per level-2 call (in toolApproval, not again in the call),
    // and the SDK recorded each answer as its automatic approval.
    expect(asked.map((request) => [request.tool, request.pattern])).toEqual([
      ['background', `background(${command})`],
      ['job_kill', `job_kill(${command})`],
    ]);
    const content = answer.steps.flatMap((step) => step.content);
    const approvals = content.filter((part) => part.type === 'tool-approval-request');
    expect(approvals.map((part) => [part.toolCall.toolName, part.isAutomatic])).toEqual([
      ['background', true],
      ['job_kill', true],
    ]);
    expect(content.filter((part) => part.type === 'tool-approval-response').map((part) => part.approved)).toEqual([true, true]);

    // The model was offered each tool with createTools' description and JSON Schema, exactly.
    const offered = (model.doGenerateCalls[0]!.tools ?? []) as { name: string; description?: string; inputSchema?: unknown }[];
    expect(offered.map((tool) => tool.name)).toEqual(heph.hephTools.all.map((definition) => definition.name));
    for (const definition of heph.hephTools.all) {
      expect(offered.find((tool) => tool.name === definition.name)).toMatchObject({ description: definition.description, inputSchema: definition.inputSchema });
    }
    expect(turns.length).toBe(4);
  });

  it.skipIf(skip)("the SandboxSession through generateText's experimental_sandbox: a server spawned, fetched with run(), killed; a foreground command's leftover child cleaned up", async () => {
    const { generateText, isStepCount, tool, z, HephJobsSandboxSession } = await load();
    const { mark, runtime, heph } = await setUp(mode);
    const oracle = newOracle();
    const foreground = newOracle();
    const sandbox = new HephJobsSandboxSession(runtime, { env: { HEPH_TEST_MARK: mark }, workingDirectory: tempDir() });
    const spawned = new Map<number, HephJobsSandboxProcess>();
    // Command tools written as the SDK documents them: the sandbox comes from the execution options.
    const sandboxTools = {
      shell: tool({
        description: 'Run a shell command.',
        inputSchema: z.object({ command: z.string() }),
        execute: async ({ command }, { abortSignal, experimental_sandbox }) => experimental_sandbox!.run({ command, ...(abortSignal ? { abortSignal } : {}) }),
      }),
      start_server: tool({
        description: 'Start a long-running command and wait for its ready line.',
        inputSchema: z.object({ command: z.string() }),
        execute: async ({ command }, { experimental_sandbox }) => {
          const started = (await experimental_sandbox!.spawn({ command })) as HephJobsSandboxProcess;
          spawned.set(started.pid, started);
          return { pid: started.pid, ready: (await readUntil(started.stdout, /ready on port \d+\n/)).trim() };
        },
      }),
      stop_server: tool({
        description: 'Stop a command start_server started.',
        inputSchema: z.object({ pid: z.number() }),
        execute: async ({ pid }) => {
          await spawned.get(pid)!.kill();
          return spawned.get(pid)!.wait();
        },
      }),
    };
    const url = (results: Read[]) => `http://127.0.0.1:${/ready on port (\d+)/.exec(results[0]!.read)![1]}/`;
    let whileRunning: { processes: string[]; eof: boolean } | null = null;
    const { model, last } = await scriptedModel([
      () => ({ name: 'start_server', args: { command: `${oracle.prefix}exec ${JSON.stringify(process.execPath)} ${SERVER}` } }),
      // The sandbox's process is a heph-jobs job: our own job_status reads it by its pid.
      ([started]) => ({ name: 'job_status', args: { id: (JSON.parse(started!.read) as { pid: number }).pid } }),
      (results) => ({ name: 'shell', args: { command: `${JSON.stringify(process.execPath)} -e "fetch('${url(results)}').then((r) => r.text()).then((t) => process.stdout.write(t))"` } }),
      () => {
        whileRunning = { processes: marked(mark), eof: oracle.closed };
        return { name: 'stop_server', args: { pid: 0 } };
      },
      () => ({ name: 'shell', args: { command: `${foreground.prefix}sleep 600 & echo out; echo err >&2; exit 3` } }),
    ]);
    const answer = await generateText({
      model,
      tools: { ...heph.tools, ...sandboxTools },
      toolApproval: heph.toolApproval,
      experimental_sandbox: sandbox,
      stopWhen: isStepCount(10),
      prompt: 'Start the server, fetch it, stop it.',
    });
    expect(answer.text).toBe('Done.');
    await nothingLeft(oracle, mark);
    await foreground.waitEof(20_000);

    expect(whileRunning).not.toBeNull();
    expect(whileRunning!.eof).toBe(false);
    expect(whileRunning!.processes.some((cmd) => cmd.includes('ready-server.mjs')), whileRunning!.processes.join('\n')).toBe(true);

    const results = last();
    expect(results.map((r) => r.tool)).toEqual(['start_server', 'job_status', 'shell', 'stop_server', 'shell']);
    const [started, status, fetched, stopped, ran] = results;
    const port = /ready on port (\d+)/.exec(started!.read)![1];
    expect(JSON.parse(started!.read)).toEqual({ pid: 0, ready: `ready on port ${port}` });
    expect(status!.read).toBe(recorder.calls[0]!.result!.text);
    expect(status!.read).toMatch(new RegExp(`^job 0 running [\\s\\S]*\\n> ready on port ${port}\\n`));
    expect(JSON.parse(fetched!.read)).toEqual({ exitCode: 0, stdout: 'ok\n', stderr: '' });
    expect(JSON.parse(stopped!.read)).toEqual({ exitCode: 143 });
    expect(JSON.parse(ran!.read)).toEqual({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    // The same jobs, as heph-jobs knows them: each cleaned up.
    expect(runtime.list().map((job) => [job.id, job.state, job.exitCode, job.signal, job.cleanedUp])).toEqual([
      [0, 'killed', null, 'SIGTERM', true],
      [1, 'exited', 0, null, true],
      [2, 'exited', 3, null, true],
    ]);
  });
});

const mode = MODES[0]!;

describe.skipIf(TOO_OLD)(`the AI SDK adapter: approvals, refusals, cancellation, progress (${mode})`, () => {
  it("without an approver, the SDK's approval requests: respond() once / always / deny, the SDK's own response, and a call the SDK ran unasked is refused", async () => {
    const { generateText, isStepCount } = await load();
    const { mark, runtime, heph } = await setUp(mode, { approver: false });
    const oracle = newOracle();
    const command = `${oracle.prefix}echo up; exec sleep 600`;
    const pattern = `background(${command})`;
    const { model, last } = await scriptedModel([
      () => ({ name: 'background', args: { command, until: 'up', wait: 30 } }),
      // The same command again: "always" covers it, no question.
      () => ({ name: 'background', args: { command, until: 'up', wait: 30 } }),
      () => ({ name: 'job_kill', args: { id: 0 } }),
      () => ({ name: 'job_kill', args: { id: 1 } }),
      () => ({ name: 'job_kill', args: { id: 0 } }),
    ]);
    type Messages = NonNullable<Parameters<typeof generateText>[0]['messages']>;
    const messages: Messages = [{ role: 'user', content: 'Start it twice, then stop both.' }];
    const turn = async (extra: Partial<Parameters<typeof generateText>[0]> = {}) => {
      const result = await generateText({ model, tools: heph.tools, messages, stopWhen: isStepCount(10), ...extra } as Parameters<typeof generateText>[0]);
      messages.push(...result.responseMessages);
      return { result, requests: result.content.filter((part) => part.type === 'tool-approval-request') };
    };

    // 1. toolApproval without an approver asks the user, the pattern as the request's reason. Nothing ran yet.
    const first = await turn({ toolApproval: heph.toolApproval });
    expect(first.requests.map((part) => [part.toolCall.toolName, part.reason, part.isAutomatic ?? false])).toEqual([['background', pattern, false]]);
    expect(recorder.calls).toEqual([]);
    expect(heph.patternOf(first.requests[0]!)).toBe(pattern);
    messages.push({ role: 'tool', content: [heph.respond(first.requests[0]!, 'always')!] });

    // 2. The tools' needsApproval alone: the approved call runs, the same command runs unasked, job_kill is asked.
    const second = await turn();
    expect(recorder.calls.map((call) => call.name)).toEqual(['background', 'background']);
    expect(second.requests.map((part) => [part.toolCall.toolName, part.reason])).toEqual([['job_kill', undefined]]);
    expect(heph.patternOf(second.requests[0]!)).toBe(`job_kill(${command})`);
    messages.push({ role: 'tool', content: [heph.respond(second.requests[0]!, 'deny')!] });

    // 3. The denial reaches the model with heph-jobs' sentence; the next job_kill is asked, and approved by the SDK's own response.
    const third = await turn();
    expect(recorder.calls.map((call) => call.name)).toEqual(['background', 'background']);
    expect(third.requests.map((part) => part.toolCall.input)).toEqual([{ id: 1 }]);
    messages.push({ role: 'tool', content: [{ type: 'tool-approval-response', approvalId: third.requests[0]!.approvalId, approved: true }] });

    // 4. A host policy that lets job_kill through unasked: the call is refused, saying nobody approved it.
    const fourth = await turn({ toolApproval: { job_kill: 'not-applicable' } });
    expect(fourth.requests).toEqual([]);
    expect(fourth.result.text).toBe('Done.');

    const results = last();
    expect(results.map((r) => [r.tool, r.type])).toEqual([
      ['background', 'text'],
      ['background', 'text'],
      ['job_kill', 'execution-denied'],
      ['job_kill', 'text'],
      ['job_kill', 'error-text'],
    ]);
    expect(recorder.calls.map((call) => call.name)).toEqual(['background', 'background', 'job_kill', 'job_kill']);
    expectReadAsGiven([results[0]!, results[1]!, results[3]!, results[4]!]);
    expect(results[0]!.read).toMatch(/^job 0 running /);
    expect(results[1]!.read).toMatch(/^job 1 running /);
    expect(results[2]!.read).toBe(`The user denied job_kill(${command}); nothing was stopped. Do not repeat this call; ask the user what to do instead.`);
    expect(results[3]!.read).toMatch(/^job 1 killed SIGTERM /);
    expect(results[4]!.read).toMatch(/^job_kill is refused: asking the user to approve job_kill\(.*\) failed \(the AI SDK ran it without asking/);
    expect(runtime.list().map((job) => job.state)).toEqual(['running', 'killed']);

    expect(oracle.closed).toBe(false);
    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it("a busy lock, an unknown job, refused input, bad input and a denial by heph-jobs' approver in the call reach the model as error-text outputs", async () => {
    const { generateText, isStepCount } = await load();
    const rules = { background: ['worktree:{ref}'], job_status: ['worktree:{ref}'] };
    const { mark, heph, asked } = await setUp(mode, { deny: ['job_kill'], rules });
    const oracle = newOracle();
    const { model, last } = await scriptedModel([
      () => ({ name: 'job_status', args: { id: 7 } }),
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } }),
      () => ({ name: 'job_status', args: { id: 0 } }),
      () => ({ name: 'job_input', args: { id: 0, text: 'hello\n' } }),
      () => ({ name: 'job_kill', args: { id: 0 } }),
      () => ({ name: 'job_status', args: { id: 0, lines: 'many' } }),
    ]);
    // No toolApproval: with an approver, the tools carry no needsApproval and ask it in the call.
    const answer = await generateText({ model, tools: heph.tools, stopWhen: isStepCount(10), prompt: 'Go.' });
    expect(answer.text).toBe('Done.');
    expect(answer.steps.flatMap((step) => step.content).filter((part) => part.type === 'tool-approval-request')).toEqual([]);

    const results = last();
    expect(results.map((r) => r.tool)).toEqual(['job_status', 'background', 'job_status', 'job_input', 'job_kill', 'job_status']);
    expectReadAsGiven(results);
    expect(results.map((r) => r.type)).toEqual(['error-text', 'text', 'error-text', 'error-text', 'error-text', 'error-text']);
    const [unknown, , busy, input, denied, bad] = results.map((r) => r.read);
    expect(unknown).toMatch(/^job_status: there is no job 7\./);
    expect(busy).toMatch(/^job_status cannot run: its lock rules need worktree:main, and job 0 .* Ask the user to run \/job-kill 0,/);
    expect(input).toMatch(/^job_input: /);
    expect(denied).toMatch(/^The user denied job_kill\(.*\); nothing was stopped\./);
    // Bad input is the tools' own answer (the SDK let it through unchecked), naming the field.
    expect(bad).toMatch(/lines/);
    expect(asked.map((request) => request.tool)).toEqual(['background', 'job_input', 'job_kill']);

    expect(oracle.closed).toBe(false);
    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it("generateText's abortSignal ends a wait at once with the job as it is; the job runs on until it is stopped", async () => {
    const { generateText, isStepCount } = await load();
    const { mark, runtime, heph } = await setUp(mode);
    const oracle = newOracle();
    const { model } = await scriptedModel([
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 0.2, until: 'never printed' } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 600, until: 'never printed' } }),
    ]);
    const stop = new AbortController();
    const run = generateText({ model, tools: heph.tools, toolApproval: heph.toolApproval, stopWhen: isStepCount(10), prompt: 'Go.', abortSignal: stop.signal }).catch((error: unknown) => error);
    await waitUntil(() => recorder.calls.length === 3, 'the long wait to be under way', 30_000);
    const long = recorder.calls[2]!;
    expect(long.result).toBeNull();
    expect(long.signal).toBeInstanceOf(AbortSignal);
    stop.abort();
    await waitUntil(() => long.result !== null, 'the aborted wait to answer', 20_000);
    expect(await run).toBeInstanceOf(Error);

    // Negative control: the short wait ran its course and says so; the aborted one did not.
    expect(recorder.calls[1]!.result!.job?.waited).toMatchObject({ kind: 'timed-out' });
    expect(long.signal!.aborted).toBe(true);
    expect(long.result!.job).toMatchObject({ id: 0, state: 'running', waited: null });
    expect(runtime.list()[0]?.state).toBe('running');
    expect(oracle.closed).toBe(false);

    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it("strict: true offers the openai-strict schemas, each null read as the field left out; maxWaitMs cuts a wait", async () => {
    const { generateText, isStepCount, aiTools } = await load();
    const mark = randomUUID();
    const runtime = await startRuntime(mode);
    const oracle = newOracle();
    const heph = aiTools(runtime, { strict: true, maxWaitMs: 300, approve: async () => 'once', defaults: { env: { ...process.env, HEPH_TEST_MARK: mark } } });
    const strict = heph.hephTools.definitions({ flavor: 'openai-strict' });
    const nulls = (name: string, given: Record<string, unknown>) => {
      const properties = Object.keys(strict.find((definition) => definition.function.name === name)!.function.parameters.properties as object);
      return { ...Object.fromEntries(properties.map((key) => [key, null])), ...given };
    };
    const { model, last } = await scriptedModel([
      () => ({ name: 'background', args: nulls('background', { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 }) }),
      () => ({ name: 'job_status', args: nulls('job_status', { id: 0, wait: 600, until: 'never printed' }) }),
    ]);
    expect((await generateText({ model, tools: heph.tools, stopWhen: isStepCount(5), prompt: 'Go.' })).text).toBe('Done.');

    const offered = model.doGenerateCalls[0]!.tools as { name: string; inputSchema: unknown; strict?: boolean }[];
    expect(offered.map((tool) => [tool.name, tool.inputSchema, tool.strict])).toEqual(strict.map((definition) => [definition.function.name, definition.function.parameters, true]));
    const results = last();
    expectReadAsGiven(results);
    expect(results.map((r) => r.type)).toEqual(['text', 'text']);
    expect(results[0]!.read).toMatch(/^job 0 running [\s\S]*\n> up\n/);
    // The 600 s wait was cut to the cap (the call answered), and the answer says so.
    expect(recorder.calls[1]!.result!.job?.waited).toMatchObject({ kind: 'timed-out', cut: { askedMs: 600_000, capMs: 300 } });

    expect(oracle.closed).toBe(false);
    await runtime.kill(0);
    await nothingLeft(oracle, mark);
  });

  it("streamText: a background whose job waits for its locks yields the waiting report as a preliminary result, then its answer", async () => {
    const { streamText, isStepCount } = await load();
    const { mark, runtime, heph } = await setUp(mode);
    const holderOracle = newOracle();
    const oracle = newOracle();
    const port = uniquePort();
    const holder = await runtime.background({ command: `${holderOracle.prefix}exec sleep 600`, locks: [port], env: { ...process.env, HEPH_TEST_MARK: mark } });
    const { model, last } = await scriptedModel([() => ({ name: 'background', args: { command: `${oracle.prefix}echo got it; exec sleep 600`, locks: [port], until: 'got it', wait: 30 } })]);
    const result = streamText({ model, tools: heph.tools, toolApproval: heph.toolApproval, stopWhen: isStepCount(5), prompt: 'Go.' });
    const outputs: { preliminary: boolean; output: ToolResult }[] = [];
    for await (const part of result.fullStream) {
      if (part.type !== 'tool-result') continue;
      const output = part.output as ToolResult;
      outputs.push({ preliminary: part.preliminary === true, output });
      // The job waits for the holder's lock until the holder is stopped.
      if (output.job?.state === 'waiting') await runtime.kill(holder.id);
    }
    expect(await result.text).toBe('Done.');

    // The SDK streams every value the tool yields as preliminary, the last one again as the result.
    expect(outputs.map((o) => [o.preliminary, o.output.job?.state])).toEqual([
      [true, 'waiting'],
      [true, 'running'],
      [false, 'running'],
    ]);
    const [waiting, , final] = outputs.map((o) => o.output);
    expect(waiting!.job!.blockedBy.map((blocker) => blocker.owner)).toEqual([expect.objectContaining({ jobId: holder.id })]);
    expect(waiting!.text).toBe(waiting!.job!.text);
    expect(final).toEqual(recorder.calls[0]!.result);
    expect(final!.text).toMatch(/^job 1 running [\s\S]*\n> got it\n/);
    // The model read the answer, not the progress.
    expect(last().map((r) => r.read)).toEqual([final!.text]);

    await holderOracle.waitEof(20_000);
    expect(oracle.closed).toBe(false);
    expect(await heph.hephTools.userKill(1)).toMatch(/^job 1 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });
});

describe.skipIf(TOO_OLD)(`the AI SDK adapter's SandboxSession, driven as the SDK documents it (${mode})`, () => {
  it('processes: stdin, exit codes, kill, an abort, a timeout, output limits, env and working directory, locks (a kill before the start), destroy()', async () => {
    const { HephJobsSandboxSession } = await load();
    const mark = randomUUID();
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const root = tempDir();
    fs.mkdirSync(path.join(root, 'sub'));
    const sandbox = new HephJobsSandboxSession(runtime, { workingDirectory: root, env: { HEPH_TEST_MARK: mark, FROM_SESSION: 'session' } });
    expect(sandbox.description).toContain(root);

    // stdin: a prompt (an unfinished line) comes out as it is, the answer goes in, EOF closes it.
    const asking = await sandbox.spawn({ command: "printf 'name? '; read name; echo \"hello $name\"; cat; echo bye >&2", stdin: true });
    expect(await readUntil(asking.stdout, /name\? $/)).toBe('name? ');
    const writer = asking.stdin.getWriter();
    await writer.write(new TextEncoder().encode('heph\nrest'));
    await writer.close();
    const [out, err] = await Promise.all([textOf(asking.stdout), textOf(asking.stderr)]);
    expect(out).toBe('hello heph\nrest\n');
    expect(err).toBe('bye\n');
    expect(await asking.wait()).toEqual({ exitCode: 0 });

    // Exit codes; env (the session's and the command's) and the working directory (relative to the session's).
    expect(await sandbox.run({ command: 'exit 7' })).toEqual({ exitCode: 7, stdout: '', stderr: '' });
    expect(await sandbox.run({ command: 'pwd; echo "$FROM_SESSION $FROM_CALL"', workingDirectory: 'sub', env: { FROM_CALL: 'call' } })).toEqual({
      exitCode: 0,
      stdout: `${path.join(root, 'sub')}\nsession call\n`,
      stderr: '',
    });
    await expect(sandbox.spawn({ command: 'true', workingDirectory: 'missing' })).rejects.toThrow(/missing/);

    // maxOutputLength: the text cut, the full lengths told.
    const full = Array.from({ length: 1000 }, (_, i) => `${i + 1}\n`).join('');
    expect(await sandbox.run({ command: 'seq 1 1000', maxOutputLength: 10 })).toEqual({ exitCode: 0, stdout: full.slice(0, 10), stderr: '', stdoutLength: full.length, stderrLength: 0 });

    // kill(): 128 + SIGTERM, idempotent, every process of the job gone.
    const killed = newOracle();
    const server = await sandbox.spawn({ command: `${killed.prefix}sleep 600 & echo up; exec sleep 600` });
    expect(await readUntil(server.stdout, /up\n/)).toBe('up\n');
    expect(killed.closed).toBe(false);
    // "up" comes before the shell's exec of the second sleep: wait until both are seen.
    await waitUntil(() => marked(mark).filter((cmd) => cmd === 'sleep 600').length === 2, 'both sleeps', 10_000, () => marked(mark));
    await Promise.all([server.kill(), server.kill()]);
    await killed.waitEof(20_000);
    expect(await server.wait()).toEqual({ exitCode: 143 });
    await server.kill();

    // An abort kills the job; wait() and run() reject with the abort's reason once it is gone.
    const aborted = newOracle();
    const stop = new AbortController();
    const long = await sandbox.spawn({ command: `${aborted.prefix}echo up; exec sleep 600`, abortSignal: stop.signal });
    await readUntil(long.stdout, /up\n/);
    expect(aborted.closed).toBe(false);
    stop.abort(new Error('user stopped it'));
    await expect(long.wait()).rejects.toThrow('user stopped it');
    await aborted.waitEof(20_000);
    const stopRun = new AbortController();
    const running = sandbox.run({ command: 'echo up; exec sleep 600', abortSignal: stopRun.signal });
    await waitUntil(() => runtime.list().at(-1)?.command === 'echo up; exec sleep 600' && runtime.list().at(-1)?.state === 'running', 'the run to start');
    stopRun.abort(new Error('run stopped'));
    await expect(running).rejects.toThrow('run stopped');
    await expect(sandbox.run({ command: 'true', abortSignal: stopRun.signal })).rejects.toThrow('run stopped');

    // The session's timeout: 124, as timeout(1) exits.
    const timed = new HephJobsSandboxSession(runtime, { timeoutMs: 300 });
    expect(await timed.run({ command: 'sleep 600' })).toEqual({ exitCode: 124, stdout: '', stderr: '' });

    // Locks: a second command waits for the first's; spawn() returns at once, and it runs once the first is stopped.
    const locked = new HephJobsSandboxSession(runtime, { locks: [uniquePort()], env: { HEPH_TEST_MARK: mark } });
    const first = await locked.spawn({ command: 'echo one; exec sleep 600' });
    await readUntil(first.stdout, /one\n/);
    const second = await locked.spawn({ command: 'echo two' });
    const third = await locked.spawn({ command: 'echo three' });
    expect([second.pid, third.pid].map((id) => runtime.list().find((job) => job.id === id)?.state)).toEqual(['waiting', 'waiting']);
    // One killed before it could start ends as a killed one, without having run.
    await third.kill();
    expect(await third.wait()).toEqual({ exitCode: 143 });
    expect(await textOf(third.stdout)).toBe('');
    expect(runtime.list().find((job) => job.id === third.pid)?.state).toBe('cancelled');
    await first.kill();
    expect(await textOf(second.stdout)).toBe('two\n');
    expect(await second.wait()).toEqual({ exitCode: 0 });

    // destroy(): every command of the session still running is stopped.
    const left = newOracle();
    const a = await sandbox.spawn({ command: `${left.prefix}exec sleep 600` });
    const b = await sandbox.spawn({ command: `${left.prefix}exec sleep 600` });
    await waitUntil(() => [a.pid, b.pid].every((id) => runtime.list().find((job) => job.id === id)?.state === 'running'), 'both to run');
    expect(left.closed).toBe(false);
    await sandbox.destroy();
    expect(await Promise.all([a.wait(), b.wait()])).toEqual([{ exitCode: 143 }, { exitCode: 143 }]);
    await left.waitEof(20_000);
    await waitUntil(() => processesWithEnv(`HEPH_TEST_MARK=${mark}`).length === 0, "no process with the run's mark", 20_000, () => marked(mark));
    expect(runtime.list().every((job) => job.cleanedUp)).toBe(true);
  });

  it("files: this machine's, relative to the session's working directory, as the interface documents them", async () => {
    const { HephJobsSandboxSession } = await load();
    const runtime = await startRuntime(mode);
    const root = tempDir();
    const sandbox = new HephJobsSandboxSession(runtime, { workingDirectory: root });

    await sandbox.writeTextFile({ path: 'a/b/notes.txt', content: 'one\ntwo\nthree\n' });
    expect(fs.readFileSync(path.join(root, 'a/b/notes.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
    expect(await sandbox.readTextFile({ path: 'a/b/notes.txt' })).toBe('one\ntwo\nthree\n');
    expect(await sandbox.readTextFile({ path: 'a/b/notes.txt', startLine: 2, endLine: 3 })).toBe('two\nthree');
    expect(await sandbox.readTextFile({ path: 'a/b/notes.txt', startLine: 3, endLine: 99 })).toBe('three\n');
    expect(await sandbox.readTextFile({ path: 'missing.txt' })).toBeNull();
    // What the session's commands see is the same file.
    expect(await sandbox.run({ command: 'cat a/b/notes.txt' })).toMatchObject({ stdout: 'one\ntwo\nthree\n' });

    await sandbox.writeBinaryFile({ path: path.join(root, 'bytes.bin'), content: new Uint8Array([0, 1, 2, 255]) });
    expect([...(await sandbox.readBinaryFile({ path: 'bytes.bin' }))!]).toEqual([0, 1, 2, 255]);
    expect(await sandbox.readBinaryFile({ path: 'a/b/notes.txt/x' })).toBeNull();
    await sandbox.writeFile({ path: 'streamed/out.txt', content: new Blob(['stream', 'ed\n']).stream() as ReadableStream<Uint8Array> });
    expect(await textOf((await sandbox.readFile({ path: 'streamed/out.txt' }))!)).toBe('streamed\n');
    expect(await sandbox.readFile({ path: 'nothing' })).toBeNull();
    await expect(sandbox.readFile({ path: 'a' })).rejects.toThrow(/EISDIR/);
    await sandbox.writeTextFile({ path: 'latin.txt', content: 'café', encoding: 'latin1' });
    expect(fs.readFileSync(path.join(root, 'latin.txt'))).toEqual(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    expect(await sandbox.readTextFile({ path: 'latin.txt', encoding: 'latin1' })).toBe('café');

    expect(await sandbox.stat({ path: 'a/b/notes.txt' })).toEqual({ type: 'file', size: 14 });
    expect(await sandbox.stat({ path: 'a' })).toMatchObject({ type: 'directory' });
    expect(await sandbox.stat({ path: 'nope' })).toBeNull();
    fs.symlinkSync('b/notes.txt', path.join(root, 'a/link'));
    expect(await sandbox.stat({ path: 'a/link' })).toEqual({ type: 'file', size: 14 });
    expect((await sandbox.listDirectory({ path: 'a' }))!.sort((x, y) => x.name.localeCompare(y.name))).toEqual([
      { name: 'b', type: 'directory' },
      { name: 'link', type: 'symlink' },
    ]);
    expect(await sandbox.listDirectory({ path: 'nope' })).toBeNull();
    await expect(sandbox.listDirectory({ path: 'a/b/notes.txt' })).rejects.toThrow(/ENOTDIR/);

    expect(await sandbox.deleteFile({ path: 'a/link' })).toBe(true);
    expect(fs.existsSync(path.join(root, 'a/b/notes.txt'))).toBe(true);
    expect(await sandbox.deleteFile({ path: 'a/link' })).toBe(false);
    await expect(sandbox.deleteFile({ path: 'a/b' })).rejects.toThrow(/EISDIR/);
    await expect(sandbox.writeTextFile({ path: 'a/b', content: 'x' })).rejects.toThrow(/EISDIR/);

    const stopped = new AbortController();
    stopped.abort(new Error('no more'));
    await expect(sandbox.readTextFile({ path: 'a/b/notes.txt', abortSignal: stopped.signal })).rejects.toThrow('no more');
  });
});
