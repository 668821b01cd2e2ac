/**
 * `heph-jobs/langchain` in whole agent loops of real LangChain (`@langchain/core`): a scripted chat
 * model (a small BaseChatModel that binds tools as OpenAI tools and answers from the ToolMessages
 * its prompt holds) and LangChain's tool-calling loop (the model's `tool_calls`, each run by
 * `tool.invoke(call, config)`, its ToolMessage appended), as LangChain's docs write it:
 * - what the model read of each call is the text createTools gave (recorded by wrapping the
 *   definitions createTools returns), with `status: 'error'` on refusals and the facts as the
 *   ToolMessage's artifact; level-2 calls were asked of heph-jobs' approver; the config's signal
 *   ends a wait with the job as it is;
 * and nothing is left running (kernel truth: the FIFO every job process inherits reaches EOF, and
 * /proc holds no process with the run's HEPH_TEST_MARK), each oracle seen positive first.
 */
import type { Recorded } from '../helpers/recorded-tools.js';
import { approver, marked, newOracle, nothingLeft } from '../helpers/adapter-runs.js';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { BaseChatModel, type BaseChatModelCallOptions, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { langChainTools, type LangChainTools } from '../../src/adapters/langchain.js';
import { waitUntil } from '../helpers/kernel.js';
import { MODES, modeRows, type Mode } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';

const recorder = vi.hoisted(() => ({ calls: [] as Recorded[] }));
vi.mock('../../src/tools/index.js', async (importOriginal) =>
  (await import('../helpers/recorded-tools.js')).recordingTools(await importOriginal(), recorder.calls),
);

/** What the model read of one call: the ToolMessage its next prompt holds. */
interface Read {
  tool: string;
  args: Record<string, unknown>;
  read: string;
  status: string | undefined;
  artifact: unknown;
}
type Call = { name: string; args: Record<string, unknown> };
type Step = (results: Read[]) => Call;

const SERVER = path.join(FIXTURES, 'ready-server.mjs');
afterEach(() => {
  recorder.calls.splice(0);
});


/** The ToolMessages a prompt holds, in order, with the call each answers. */
function resultsOf(messages: BaseMessage[]): Read[] {
  const calls = new Map<string, Call>();
  const results: Read[] = [];
  for (const message of messages) {
    if (AIMessage.isInstance(message)) for (const call of message.tool_calls ?? []) calls.set(call.id!, { name: call.name, args: call.args });
    if (ToolMessage.isInstance(message)) {
      const call = calls.get(message.tool_call_id);
      results.push({ tool: call?.name ?? message.name!, args: call?.args ?? {}, read: message.text, status: message.status, artifact: message.artifact });
    }
  }
  return results;
}

interface ScriptedOptions extends BaseChatModelCallOptions {
  tools?: unknown[];
}

/**
 * A scripted chat model: bound to tools as an OpenAI chat model is (convertToOpenAITool), each
 * request gets the next step's call (chosen from the ToolMessages its prompt holds), then a text.
 */
class ScriptedChatModel extends BaseChatModel<ScriptedOptions> {
  readonly offered: unknown[][] = [];
  readonly turns: Read[][] = [];

  constructor(private readonly steps: Step[]) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(tools: BindToolsInput[], kwargs?: Partial<ScriptedOptions>) {
    return this.withConfig({ ...kwargs, tools: tools.map((t) => convertToOpenAITool(t)) });
  }

  async _generate(messages: BaseMessage[], options: this['ParsedCallOptions']): Promise<ChatResult> {
    this.offered.push(options.tools ?? []);
    const results = resultsOf(messages);
    this.turns.push(results);
    const message =
      results.length >= this.steps.length
        ? new AIMessage('Done.')
        : (() => {
            const next = this.steps[results.length]!(results);
            return new AIMessage({ content: '', tool_calls: [{ id: `call_${results.length}`, name: next.name, args: next.args, type: 'tool_call' }] });
          })();
    return { generations: [{ message, text: message.text }] };
  }

  last(): Read[] {
    return this.turns.at(-1) ?? [];
  }
}

/** LangChain's tool-calling loop: call the model, run each tool call it makes, until it answers in text. */
async function agentLoop(model: ScriptedChatModel, heph: LangChainTools, input: string, signal?: AbortSignal): Promise<BaseMessage[]> {
  const bound = model.bindTools(heph.tools);
  const config = signal ? { signal } : {};
  const messages: BaseMessage[] = [new HumanMessage(input)];
  for (let turn = 0; turn < 20; turn++) {
    const answer = await bound.invoke(messages, config);
    messages.push(answer);
    if (!answer.tool_calls?.length) return messages;
    for (const call of answer.tool_calls) {
      const message = await heph.byName[call.name as keyof LangChainTools['byName']].invoke({ ...call, type: 'tool_call' }, config);
      // Invoked with a tool call, a LangChain tool answers with a ToolMessage (its type also allows the bare tuple).
      if (!ToolMessage.isInstance(message)) throw new Error(`${call.name} did not answer with a ToolMessage: ${JSON.stringify(message)}`);
      messages.push(message);
    }
  }
  throw new Error('the model never stopped calling tools');
}




async function setUp(mode: Mode, options: { deny?: string[]; rules?: Record<string, string[]> } = {}) {
  const mark = randomUUID();
  const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
  const { approve, asked } = approver(options.deny);
  const heph = langChainTools(runtime, {
    approve,
    ...(options.rules ? { rules: options.rules } : {}),
    defaults: { env: { ...process.env, HEPH_TEST_MARK: mark }, ref: 'main' },
  });
  return { mark, runtime, heph, asked };
}

/** Each result the model read is the text createTools gave, an error exactly when it was a refusal, with its facts as the artifact. */
function expectReadAsGiven(results: Read[], given: Recorded[]): void {
  expect(results.length).toBe(given.length);
  for (const [i, result] of results.entries()) {
    const { text, ...facts } = given[i]!.result!;
    expect(result.read).toBe(text);
    expect(result.status, result.read).toBe(facts.isError ? 'error' : 'success');
    expect(result.artifact).toEqual(facts);
  }
}

describe.each(modeRows())('the LangChain adapter in an agent loop (%s)', (mode, skip) => {
  it.skipIf(skip)('starts a server, waits for its ready line, reads it, kills it: the model reads each text as createTools gave it, the facts as the artifact', async () => {
    const { mark, heph, asked } = await setUp(mode);
    const oracle = newOracle();
    const command = `${oracle.prefix}exec ${JSON.stringify(process.execPath)} ${SERVER}`;
    let whileRunning: { processes: string[]; eof: boolean } | null = null;
    const model = new ScriptedChatModel([
      () => ({ name: 'background', args: { command, until: '^ready on port', wait: 30 } }),
      () => {
        whileRunning = { processes: marked(mark), eof: oracle.closed };
        return { name: 'job_status', args: { id: 0 } };
      },
      () => ({ name: 'job_kill', args: { id: 0 } }),
    ]);
    const messages = await agentLoop(model, heph, 'Start the server, read it, stop it.');
    expect(messages.at(-1)!.text).toBe('Done.');
    await nothingLeft(oracle, mark);

    // Negative control of both oracles: while the job ran they saw it.
    expect(whileRunning).not.toBeNull();
    expect(whileRunning!.eof).toBe(false);
    expect(whileRunning!.processes.some((cmd) => cmd.includes('ready-server.mjs')), whileRunning!.processes.join('\n')).toBe(true);

    const results = model.last();
    expect(results.map((r) => r.tool)).toEqual(['background', 'job_status', 'job_kill']);
    expect(recorder.calls.map((c) => c.name)).toEqual(['background', 'job_status', 'job_kill']);
    expectReadAsGiven(results, recorder.calls);
    expect(results.map((r) => r.status)).toEqual(['success', 'success', 'success']);
    const [background, status, kill] = results.map((r) => r.read);
    expect(background).toMatch(/^job 0 running /);
    expect(background).toMatch(/\n> ready on port \d+\n/);
    expect(status).toMatch(/^job 0 running [\s\S]*\n> ready on port \d+\n/);
    expect(kill).toMatch(/^job 0 killed SIGTERM /);
    expect(results[0]!.artifact).toMatchObject({ isError: false, job: { id: 0, state: 'running' } });
    expect(results[2]!.artifact).toMatchObject({ isError: false, job: { id: 0, state: 'killed' } });
    expect(asked.map((request) => [request.tool, request.pattern])).toEqual([
      ['background', `background(${command})`],
      ['job_kill', `job_kill(${command})`],
    ]);

    // The model was offered each tool with createTools' name, description and JSON Schema, exactly.
    expect(model.offered[0]).toEqual(
      heph.hephTools.all.map((definition) => ({ type: 'function', function: { name: definition.name, description: definition.description, parameters: definition.inputSchema } })),
    );
    expect(model.turns.length).toBe(4);
  });
});

const mode = MODES[0]!;

describe(`the LangChain adapter: refusals and cancellation (${mode})`, () => {
  it("a busy lock, an unknown job, refused input, bad input and a denial reach the model as error ToolMessages with the tools' text, and the loop goes on", async () => {
    const rules = { background: ['worktree:{ref}'], job_status: ['worktree:{ref}'] };
    const { mark, heph, asked } = await setUp(mode, { deny: ['job_kill'], rules });
    const oracle = newOracle();
    const model = new ScriptedChatModel([
      () => ({ name: 'job_status', args: { id: 7 } }),
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } }),
      () => ({ name: 'job_status', args: { id: 0 } }),
      () => ({ name: 'job_input', args: { id: 0, text: 'hello\n' } }),
      () => ({ name: 'job_kill', args: { id: 0 } }),
      // Input the schema does not allow (a bad type, an unknown field): the tools' own answer, not LangChain's throw.
      () => ({ name: 'job_status', args: { id: 0, lines: 'many' } }),
      () => ({ name: 'job_status', args: { id: 0, colour: 'red' } }),
    ]);
    const messages = await agentLoop(model, heph, 'Go.');
    expect(messages.at(-1)!.text).toBe('Done.');

    const results = model.last();
    expect(results.map((r) => r.tool)).toEqual(['job_status', 'background', 'job_status', 'job_input', 'job_kill', 'job_status', 'job_status']);
    expectReadAsGiven(results, recorder.calls);
    expect(results.map((r) => r.status)).toEqual(['error', 'success', 'error', 'error', 'error', 'error', 'error']);
    const [unknown, , busy, input, denied, badType, unknownField] = results.map((r) => r.read);
    expect(unknown).toMatch(/^job_status: there is no job 7\./);
    expect(busy).toMatch(/^job_status cannot run: its lock rules need worktree:main, and job 0 .* Ask the user to run \/job-kill 0,/);
    expect(input).toMatch(/^job_input: /);
    expect(denied).toMatch(/^The user denied job_kill\(.*\); nothing was stopped\./);
    expect(badType).toMatch(/lines/);
    expect(unknownField).toMatch(/colour/);
    expect(asked.map((request) => request.tool)).toEqual(['background', 'job_input', 'job_kill']);

    // Invoked with bare arguments (no tool call), a tool answers with its text, as LangChain tools do.
    expect(await heph.byName.job_status.invoke({ id: 9 })).toBe(recorder.calls.at(-1)!.result!.text);
    expect(recorder.calls.at(-1)!.result!.text).toMatch(/^job_status: there is no job 9\./);

    expect(oracle.closed).toBe(false);
    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it("the config's signal ends a wait at once with the job as it is; the job runs on until it is stopped", async () => {
    const { mark, runtime, heph } = await setUp(mode);
    const oracle = newOracle();
    const model = new ScriptedChatModel([
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 0.2, until: 'never printed' } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 600, until: 'never printed' } }),
    ]);
    const stop = new AbortController();
    const running = agentLoop(model, heph, 'Go.', stop.signal).catch((error: unknown) => error);
    await waitUntil(() => recorder.calls.length === 3, 'the long wait to be under way', 30_000);
    const long = recorder.calls[2]!;
    expect(long.result).toBeNull();
    expect(long.signal).toBeInstanceOf(AbortSignal);
    stop.abort();
    await waitUntil(() => long.result !== null, 'the aborted wait to answer', 20_000);
    // LangChain rejects the aborted call itself: the loop ends, as the host asked.
    expect((await running) as Error).toMatchObject({ name: 'AbortError' });

    // Negative control: the short wait ran its course and says so; the aborted one did not.
    expect(recorder.calls[1]!.result!.job?.waited).toMatchObject({ kind: 'timed-out' });
    expect(long.signal!.aborted).toBe(true);
    expect(long.result!.job).toMatchObject({ id: 0, state: 'running', waited: null });
    expect(runtime.list()[0]?.state).toBe('running');
    expect(oracle.closed).toBe(false);

    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });
});
