/**
 * `heph-jobs/openai-agents` in whole agent loops of the real OpenAI Agents SDK (`run()`), with the
 * SDK's own scripted model (`@openai/agents/testing` ScriptedModel, each step answering from the
 * tool outputs its request holds):
 * - what the model read of each call is the text createTools gave (recorded by wrapping the
 *   definitions createTools returns), and the facts ride on the output item as customData;
 * - level-2 calls stop the run with an interruption (`needsApproval`) answered through
 *   heph-jobs' approver (`askApprover`) or `answer()`; "always" remembers the exact pattern only;
 * - refusals (busy lock, unknown job, refused input, a denial) reach the model as outputs and the
 *   run goes on; the run's signal ends a wait with the job as it is;
 * and nothing is left running (kernel truth: the FIFO every job process inherits reaches EOF, and
 * /proc holds no process with the run's HEPH_TEST_MARK), each oracle seen positive first.
 */
import type { Recorded } from '../helpers/recorded-tools.js';
import { approver, marked, newOracle, nothingLeft } from '../helpers/adapter-runs.js';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Agent, run, RunContext, setTracingDisabled, type RunToolApprovalItem, type RunToolCallOutputItem } from '@openai/agents';
import { modelResponder, ScriptedModel, type RecordedModelCall } from '@openai/agents/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openAIAgentsTools, type OpenAIAgentsToolsOptions } from '../../src/adapters/openai-agents.js';
import type { ApprovalAnswer, ApprovalRequest, ToolDefinition, ToolResult } from '../../src/index.js';
import { waitUntil } from '../helpers/kernel.js';
import { MODES, modeRows, type Mode } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';

// No trace export to OpenAI from a test.
setTracingDisabled(true);

const recorder = vi.hoisted(() => ({ calls: [] as Recorded[] }));
vi.mock('../../src/tools/index.js', async (importOriginal) =>
  (await import('../helpers/recorded-tools.js')).recordingTools(await importOriginal(), recorder.calls),
);

/** What the model read of one call, from the input of its next request. */
interface Read {
  tool: string;
  args: Record<string, unknown>;
  read: string;
}
type Call = { name: string; args: Record<string, unknown> };
type Step = (results: Read[]) => Call;

interface InputItem {
  type?: string;
  callId?: string;
  name?: string;
  arguments?: string;
  output?: string | { type: string; text?: string };
}

const SERVER = path.join(FIXTURES, 'ready-server.mjs');
afterEach(() => {
  recorder.calls.splice(0);
});


/** The tool outputs a request's input holds, in order, with the call each answers. */
function resultsOf(input: RecordedModelCall['request']['input']): Read[] {
  if (typeof input === 'string') return [];
  const calls = new Map<string, { name: string; args: Record<string, unknown> }>();
  const results: Read[] = [];
  for (const item of input as InputItem[]) {
    if (item.type === 'function_call') calls.set(item.callId!, { name: item.name!, args: JSON.parse(item.arguments ?? '{}') as Record<string, unknown> });
    if (item.type === 'function_call_result') {
      const call = calls.get(item.callId!);
      const output = item.output;
      results.push({ tool: call?.name ?? item.name!, args: call?.args ?? {}, read: typeof output === 'string' ? output : (output?.text ?? JSON.stringify(output)) });
    }
  }
  return results;
}

/** Arguments as a strict model writes them: every field of the tool's schema, null for those left out. */
function strictArgs(fields: Record<string, string[]>, name: string, args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries([...(fields[name] ?? []).map((field): [string, unknown] => [field, null]), ...Object.entries(args)]);
}

/**
 * The SDK's scripted model: each request gets the next step's call (chosen from the outputs its
 * input holds, so the script is a function of what the model read), then a closing text.
 */
function scriptedModel(steps: Step[], strictFields: Record<string, string[]> = {}) {
  const turns: Read[][] = [];
  const respond = (call: RecordedModelCall) => {
    const results = resultsOf(call.request.input);
    turns.push(results);
    if (results.length >= steps.length) return [{ type: 'message' as const, role: 'assistant' as const, status: 'completed' as const, content: [{ type: 'output_text' as const, text: 'Done.' }] }];
    const next = steps[results.length]!(results);
    return [{ type: 'function_call' as const, callId: `call_${results.length}`, name: next.name, arguments: JSON.stringify(strictArgs(strictFields, next.name, next.args)), status: 'completed' as const }];
  };
  const model = new ScriptedModel(Array.from({ length: steps.length + 1 }, () => modelResponder(respond)));
  return { model, turns, last: () => turns.at(-1) ?? [] };
}




async function setUp(mode: Mode, options: Omit<OpenAIAgentsToolsOptions, 'approve' | 'defaults'> & { answers?: Record<string, ApprovalAnswer>; maxJobs?: number } = {}) {
  const { answers, maxJobs, ...rest } = options;
  const mark = randomUUID();
  const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks'), ...(maxJobs === undefined ? {} : { maxJobs }) });
  const { approve, asked } = approver(answers);
  const heph = openAIAgentsTools(runtime, { approve, defaults: { env: { ...process.env, HEPH_TEST_MARK: mark }, ref: 'main' }, ...rest });
  // What a strict model writes: every field (none when the schemas are not strict).
  const fields = Object.fromEntries(heph.hephTools.all.map((definition) => [definition.name, rest.strict === false ? [] : Object.keys((definition.inputSchema as { properties: object }).properties)]));
  return { mark, runtime, heph, asked, fields };
}

type Heph = Awaited<ReturnType<typeof setUp>>['heph'];
type Answer = (item: RunToolApprovalItem, state: Parameters<Heph['answer']>[0]) => Promise<void> | void;

/** Runs the agent to its end, answering each interruption with `answer` (default: heph-jobs' approver), and records them. */
async function runToEnd(agent: Agent, heph: Heph, input: string, answer?: Answer, signal?: AbortSignal) {
  const interruptions: { tool: string | undefined; pattern: string | null }[] = [];
  let result = await run(agent, input, { maxTurns: 20, ...(signal ? { signal } : {}) });
  for (;;) {
    if (result.interruptions.length === 0) break;
    for (const item of result.interruptions) interruptions.push({ tool: item.name, pattern: heph.patternOf(item) });
    if (answer) {
      for (const item of result.interruptions) await answer(item, result.state);
    } else {
      expect(await heph.askApprover(result.state, result.interruptions)).toEqual([]);
    }
    result = await run(agent, result.state, { maxTurns: 20, ...(signal ? { signal } : {}) });
  }
  // A resumed run's items are those of the whole run, the earlier turns' included.
  const outputs = result.newItems.filter((item): item is RunToolCallOutputItem => item.type === 'tool_call_output_item');
  return { result, interruptions, outputs };
}

/** Each result the model read is the text createTools gave (in the order given). */
function expectReadAsGiven(results: Read[], given: Recorded[]): void {
  expect(results.map((r) => r.read)).toEqual(given.map((call) => call.result!.text));
}

describe.each(modeRows())('the OpenAI Agents adapter in an agent loop (%s)', (mode, skip) => {
  it.skipIf(skip)('starts a server, waits for its ready line, reads it, kills it: the model reads each text as createTools gave it; level-2 calls interrupt the run', async () => {
    const { mark, heph, asked, fields } = await setUp(mode);
    const oracle = newOracle();
    const command = `${oracle.prefix}exec ${JSON.stringify(process.execPath)} ${SERVER}`;
    let whileRunning: { processes: string[]; eof: boolean } | null = null;
    const { model, turns, last } = scriptedModel([
      () => ({ name: 'background', args: { command, until: '^ready on port', wait: 30 } }),
      () => {
        whileRunning = { processes: marked(mark), eof: oracle.closed };
        return { name: 'job_status', args: { id: 0 } };
      },
      () => ({ name: 'job_kill', args: { id: 0 } }),
    ], fields);
    const agent = new Agent({ name: 'jobs', instructions: 'Run the job.', model, tools: heph.tools });
    const { result, interruptions, outputs } = await runToEnd(agent, heph, 'Start the server, read it, stop it.');
    expect(result.finalOutput).toBe('Done.');
    model.assertComplete();
    await nothingLeft(oracle, mark);

    // Negative control of both oracles: while the job ran they saw it.
    expect(whileRunning).not.toBeNull();
    expect(whileRunning!.eof).toBe(false);
    expect(whileRunning!.processes.some((cmd) => cmd.includes('ready-server.mjs')), whileRunning!.processes.join('\n')).toBe(true);

    const results = last();
    expect(results.map((r) => r.tool)).toEqual(['background', 'job_status', 'job_kill']);
    expect(recorder.calls.map((c) => c.name)).toEqual(['background', 'job_status', 'job_kill']);
    expectReadAsGiven(results, recorder.calls);
    const [background, status, kill] = results.map((r) => r.read);
    expect(background).toMatch(/^job 0 running /);
    expect(background).toMatch(/\n> ready on port \d+\n/);
    expect(status).toMatch(/^job 0 running [\s\S]*\n> ready on port \d+\n/);
    expect(kill).toMatch(/^job 0 killed SIGTERM /);
    expect(recorder.calls.every((call) => !call.result!.isError)).toBe(true);
    // The strict model's nulls were read as fields left out (job_status waited for nothing).
    expect(recorder.calls[1]!.input).toMatchObject({ id: 0, wait: null, lines: null });

    // Each level-2 call stopped the run once, asked of heph-jobs' approver with its exact pattern.
    expect(interruptions).toEqual([
      { tool: 'background', pattern: `background(${command})` },
      { tool: 'job_kill', pattern: `job_kill(${command})` },
    ]);
    expect(asked.map((request) => [request.tool, request.pattern])).toEqual([
      ['background', `background(${command})`],
      ['job_kill', `job_kill(${command})`],
    ]);

    // The facts rode on each output item, for the host (never sent to the model).
    expect(outputs.map((item) => item.customData)).toEqual(recorder.calls.map(({ result }) => {
      const { text: _text, ...facts } = result!;
      return JSON.parse(JSON.stringify(facts)) as unknown;
    }));
    expect(outputs[0]!.customData).toMatchObject({ isError: false, job: { id: 0, state: 'running' } });

    // The model was offered each tool with createTools' description and openai-strict schema, strict.
    const offered = model.firstCall!.request.tools as { type: string; name: string; description: string; parameters: unknown; strict: boolean }[];
    expect(offered.map((t) => t.name)).toEqual(heph.hephTools.all.map((definition) => definition.name));
    for (const definition of heph.hephTools.definitions({ flavor: 'openai-strict' })) {
      expect(offered.find((t) => t.name === definition.function.name)).toMatchObject({
        type: 'function',
        description: definition.function.description,
        parameters: definition.function.parameters,
        strict: true,
      });
    }
    expect(turns.length).toBe(4);
  });
});

const mode = MODES[0]!;

describe(`the OpenAI Agents adapter: refusals, approvals, cancellation (${mode})`, () => {
  it("a busy lock, an unknown job, refused input, bad input and a denial reach the model as outputs, and the run goes on", async () => {
    const rules = { background: ['worktree:{ref}'], job_status: ['worktree:{ref}'] };
    const { mark, runtime, heph, asked, fields } = await setUp(mode, { rules, answers: { job_kill: 'deny' } });
    const oracle = newOracle();
    const { model, last } = scriptedModel([
      () => ({ name: 'job_status', args: { id: 7 } }),
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } }),
      () => ({ name: 'job_status', args: { id: 0 } }),
      () => ({ name: 'job_input', args: { id: 0, text: 'hello\n' } }),
      () => ({ name: 'job_kill', args: { id: 0 } }),
      () => ({ name: 'job_status', args: { id: 0, lines: 'many' } }),
    ], fields);
    const agent = new Agent({ name: 'jobs', instructions: 'Run the job.', model, tools: heph.tools });
    const { result, interruptions, outputs } = await runToEnd(agent, heph, 'Go.');
    expect(result.finalOutput).toBe('Done.');

    const results = last();
    expect(results.map((r) => r.tool)).toEqual(['job_status', 'background', 'job_status', 'job_input', 'job_kill', 'job_status']);
    const [unknown, , busy, input, denied, bad] = results.map((r) => r.read);
    // The denied call never ran: what the model read of it is heph-jobs' denial, given to the SDK's rejection.
    expect(recorder.calls.map((c) => c.name)).toEqual(['job_status', 'background', 'job_status', 'job_input', 'job_status']);
    expectReadAsGiven([...results.slice(0, 4), results[5]!], recorder.calls);
    expect(recorder.calls.map((c) => c.result!.isError)).toEqual([true, false, true, true, true]);
    expect(unknown).toMatch(/^job_status: there is no job 7\./);
    expect(busy).toMatch(/^job_status cannot run: its lock rules need worktree:main, and job 0 .* Ask the user to run \/job-kill 0,/);
    expect(input).toMatch(/^job_input: /);
    expect(denied).toMatch(/^The user denied job_kill\(.*\); nothing was stopped\. Do not repeat this call;/);
    expect(bad).toMatch(/lines/);
    expect(interruptions.map((i) => i.tool)).toEqual(['background', 'job_input', 'job_kill']);
    expect(asked.map((request) => request.tool)).toEqual(['background', 'job_input', 'job_kill']);
    // The refusals' facts say so too.
    expect(outputs.filter((item) => item.customData !== undefined).map((item) => item.customData!.isError)).toEqual([true, false, true, true, true]);

    // Negative control of the run's approval: a level-2 call the run never approved (here, outside
    // a run) is refused by heph-jobs' gate, and the job runs on.
    const before = recorder.calls.length;
    const unapproved = await heph.byName.job_kill.invoke(new RunContext(), JSON.stringify(strictArgs(fields, 'job_kill', { id: 0 })), {
      toolCall: { type: 'function_call', callId: 'call_outside', name: 'job_kill', arguments: '{}' },
    });
    expect(unapproved).toBe(recorder.calls[before]!.result!.text);
    expect(unapproved).toMatch(/^job_kill is refused: asking the user to approve job_kill\(.*\) failed \(the run did not ask about this call; call it again to be asked\), so nothing was stopped\.$/);
    expect(runtime.list()[0]?.state).toBe('running');

    expect(oracle.closed).toBe(false);
    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it('a call the tools answer without asking (a kill of a job that ended, a start past the cap) interrupts nothing', async () => {
    const { mark, heph, asked, fields } = await setUp(mode, { maxJobs: 1 });
    const oracle = newOracle();
    const { model, last } = scriptedModel([
      () => ({ name: 'background', args: { command: 'exit 3', wait: 30 } }),
      () => ({ name: 'job_kill', args: { id: 0 } }),
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up' } }),
      () => ({ name: 'background', args: { command: 'echo second' } }),
      () => ({ name: 'job_kill', args: { id: 1 } }),
    ], fields);
    const agent = new Agent({ name: 'jobs', instructions: 'Run the jobs.', model, tools: heph.tools });
    const { result, interruptions } = await runToEnd(agent, heph, 'Go.');
    expect(result.finalOutput).toBe('Done.');
    const reads = last().map((r) => r.read);
    expect(reads[0]).toMatch(/^job 0 exited 3 /);
    expect(reads[1]).toMatch(/^job 0 exited 3 .*\n[\s\S]*has ended/);
    expect(reads[2]).toMatch(/^job 1 running /);
    expect(reads[3]).toMatch(/^background is refused: 1 of 1 jobs/);
    expect(reads[4]).toMatch(/^job 1 killed SIGTERM /);
    // Asked: the two starts that ran and the kill of the running job; the kill of the ended job and the start past the cap were answered at once.
    expect(interruptions.map((i) => i.pattern)).toEqual(['background(exit 3)', `background(${oracle.prefix}echo up; exec sleep 600)`, `job_kill(${oracle.prefix}echo up; exec sleep 600)`]);
    expect(asked.map((request) => request.pattern)).toEqual(interruptions.map((i) => i.pattern));
    await nothingLeft(oracle, mark);
  });

  it('"always" remembers the exact pattern: the same command runs without a question, another is asked; a denial through answer()', async () => {
    const { mark, heph, asked, fields } = await setUp(mode);
    const oracle = newOracle();
    const command = `${oracle.prefix}echo up; exec sleep 600`;
    const { model, last } = scriptedModel([
      () => ({ name: 'background', args: { command, until: 'up', wait: 30 } }),
      () => ({ name: 'background', args: { command, until: 'up', wait: 30 } }),
      () => ({ name: 'background', args: { command: `${command} # other` } }),
      () => ({ name: 'job_kill', args: { id: 0 } }),
      () => ({ name: 'job_kill', args: { id: 1 } }),
    ], fields);
    const answers: Record<string, ApprovalAnswer> = { [`background(${command})`]: 'always', [`background(${command} # other)`]: 'deny', 'job_kill': 'once' };
    const answered: string[] = [];
    const agent = new Agent({ name: 'jobs', instructions: 'Run the job.', model, tools: heph.tools });
    const { result, interruptions } = await runToEnd(agent, heph, 'Go.', (item, state) => {
      const pattern = heph.patternOf(item)!;
      answered.push(pattern);
      expect(heph.answer(state, item, answers[pattern] ?? answers[item.name!]!)).toBe(true);
    });
    expect(result.finalOutput).toBe('Done.');
    expect(asked).toEqual([]);

    // One question for the first command; none for it again; one for the other (denied); one per kill.
    expect(interruptions.map((i) => i.pattern)).toEqual([`background(${command})`, `background(${command} # other)`, `job_kill(${command})`, `job_kill(${command})`]);
    const reads = last().map((r) => r.read);
    expect(reads[0]).toMatch(/^job 0 running /);
    expect(reads[1]).toMatch(/^job 1 running /);
    expect(reads[2]).toBe(`The user denied background(${command} # other); nothing was started. Do not repeat this call; ask the user what to do instead.`);
    expect(reads[3]).toMatch(/^job 0 killed SIGTERM /);
    expect(reads[4]).toMatch(/^job 1 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it("the run's signal ends a wait at once with the job as it is; with approvals: 'approver' and strict: false, the approver is asked in the call and the plain schemas go out", async () => {
    const { mark, runtime, heph, asked } = await setUp(mode, { approvals: 'approver', strict: false });
    const oracle = newOracle();
    const { model } = scriptedModel([
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 0.2, until: 'never printed' } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 600, until: 'never printed' } }),
    ]);
    const agent = new Agent({ name: 'jobs', instructions: 'Run the job.', model, tools: heph.tools });
    const stop = new AbortController();
    const running = runToEnd(agent, heph, 'Go.', () => {
      throw new Error('no interruption expected');
    }, stop.signal).catch((error: unknown) => error);
    await waitUntil(() => recorder.calls.length === 3, 'the long wait to be under way', 30_000);
    const long = recorder.calls[2]!;
    expect(long.result).toBeNull();
    expect(long.signal).toBeInstanceOf(AbortSignal);
    stop.abort();
    await waitUntil(() => long.result !== null, 'the aborted wait to answer', 20_000);
    const ended = await running;
    expect((ended as Error).name).toBe('AbortError');

    // Negative control: the short wait ran its course and says so; the aborted one did not.
    expect(recorder.calls[1]!.result!.job?.waited).toMatchObject({ kind: 'timed-out' });
    expect(long.signal!.aborted).toBe(true);
    expect(long.result!.job).toMatchObject({ id: 0, state: 'running', waited: null });
    expect(runtime.list()[0]?.state).toBe('running');
    expect(oracle.closed).toBe(false);

    // The approver was asked inside the call (the run was never interrupted); the schemas went out as createTools wrote them.
    expect(asked.map((request) => request.tool)).toEqual(['background']);
    const offered = model.firstCall!.request.tools as { name: string; parameters: unknown; strict: boolean }[];
    for (const definition of heph.hephTools.all) {
      expect(offered.find((t) => t.name === definition.name)).toMatchObject({ parameters: definition.inputSchema, strict: false });
    }

    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });
});
