/**
 * `heph-jobs/mastra` in whole agent loops of the real Mastra (`Agent.generate`) with a scripted
 * model (`ai/test`'s MockLanguageModelV4, answering from the tool results its prompt holds):
 * - our tools: what the model read of each call is the text createTools gave (recorded by wrapping
 *   the definitions createTools returns), as an `error-text` result for refusals; level-2 calls
 *   were asked of heph-jobs' approver; the run's abortSignal ends a wait with the job as it is;
 * - Mastra's own execute_command, get_process_output and kill_process on the heph-backed process
 *   manager, in the background and in the foreground;
 * and nothing is left running (kernel truth: the FIFO every job process inherits reaches EOF, and
 * /proc holds no process with the run's HEPH_TEST_MARK), each oracle seen positive first.
 * @mastra/core needs Node 22.13 or later: on older Node the file is skipped, saying so.
 */
import type { Recorded } from '../helpers/recorded-tools.js';
import { approver, marked, newOracle, nothingLeft } from '../helpers/adapter-runs.js';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitUntil } from '../helpers/kernel.js';
import { MODES, modeRows, type Mode } from '../helpers/modes.js';
import { uniquePort } from '../helpers/calls.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';

const [MAJOR, MINOR] = process.versions.node.split('.').map(Number) as [number, number];
const TOO_OLD = MAJOR < 22 || (MAJOR === 22 && MINOR < 13);
const REASON = `@mastra/core 1.71 needs Node >= 22.13, and this is Node ${process.version}`;
if (TOO_OLD) console.warn(`test/adapters/mastra: skipped: ${REASON}`);

const recorder = vi.hoisted(() => ({ calls: [] as Recorded[] }));
vi.mock('../../src/tools/index.js', async (importOriginal) =>
  (await import('../helpers/recorded-tools.js')).recordingTools(await importOriginal(), recorder.calls),
);

/** What the model read of one call, from the prompt of its next request. */
interface Read {
  tool: string;
  args: Record<string, unknown>;
  read: string;
  isError: boolean;
}
type Call = { name: string; args: Record<string, unknown> };
type Step = (results: Read[]) => Call;

interface PromptPart {
  type: string;
  toolCallId?: string;
  toolName?: string;
  input?: unknown;
  output?: { type: string; value: unknown };
}

const SERVER = path.join(FIXTURES, 'ready-server.mjs');
const USAGE = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 10, text: 10, reasoning: 0 } };
afterEach(() => {
  recorder.calls.splice(0);
});


async function load() {
  const [{ Agent }, { Workspace }, { MockLanguageModelV4 }, adapter] = await Promise.all([
    import('@mastra/core/agent'),
    import('@mastra/core/workspace'),
    import('ai/test'),
    import('../../src/adapters/mastra.js'),
  ]);
  return { Agent, Workspace, MockLanguageModelV4, ...adapter };
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
        const value = part.output?.value;
        results.push({ tool: call?.name ?? part.toolName!, args: call?.args ?? {}, read: typeof value === 'string' ? value : JSON.stringify(value), isError: part.output?.type === 'error-text' || part.output?.type === 'error-json' });
      }
    }
  }
  return results;
}

/**
 * A scripted model: each request gets the next step's call (chosen from the results its prompt
 * holds, so the script is a function of what the model read), then a closing text.
 */
async function scriptedModel(steps: Step[]) {
  const { MockLanguageModelV4 } = await load();
  const turns: Read[][] = [];
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      const results = resultsOf(options.prompt as { role: string; content: unknown }[]);
      turns.push(results);
      if (results.length >= steps.length) {
        return { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE, warnings: [] };
      }
      const call = steps[results.length]!(results);
      return {
        content: [{ type: 'tool-call', toolCallId: `call_${results.length}`, toolName: call.name, input: JSON.stringify(call.args) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage: USAGE,
        warnings: [],
      };
    },
  });
  return { model, turns, last: () => turns.at(-1) ?? [] };
}




async function setUp(mode: Mode, options: { deny?: string[]; rules?: Record<string, string[]> } = {}) {
  const { mastraTools } = await load();
  const mark = randomUUID();
  const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
  const { approve, asked } = approver(options.deny);
  const heph = mastraTools(runtime, {
    approve,
    ...(options.rules ? { rules: options.rules } : {}),
    defaults: { env: { ...process.env, HEPH_TEST_MARK: mark }, ref: 'main' },
  });
  return { mark, runtime, heph, asked };
}

/** Each result the model read is the text createTools gave, flagged as an error exactly when it was a refusal. */
function expectReadAsGiven(results: Read[], offset = 0): void {
  for (const [i, result] of results.entries()) {
    const given = recorder.calls[offset + i]!.result!;
    expect(result.read).toBe(given.text);
    expect(result.isError, result.read).toBe(given.isError);
  }
}

describe.skipIf(TOO_OLD).each(modeRows())('the Mastra adapter in an agent loop (%s)', (mode, skip) => {
  it.skipIf(skip)('our tools: starts a server, waits for its ready line, reads it, kills it; the model reads each text as createTools gave it', async () => {
    const { Agent } = await load();
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
    const agent = new Agent({ id: 'jobs', name: 'jobs', instructions: 'Run the job.', model, tools: heph.tools });
    const answer = await agent.generate('Start the server, read it, stop it.', { maxSteps: 10 });
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
    expect(results.map((r) => r.isError)).toEqual([false, false, false]);
    const [background, status, kill] = results.map((r) => r.read);
    expect(background).toMatch(/^job 0 running /);
    expect(background).toMatch(/\n> ready on port \d+\n/);
    expect(status).toMatch(/^job 0 running [\s\S]*\n> ready on port \d+\n/);
    expect(kill).toMatch(/^job 0 killed SIGTERM /);
    expect(asked.map((request) => request.tool)).toEqual(['background', 'job_kill']);
    expect(asked[0]!.pattern).toBe(`background(${command})`);

    // The model was offered each tool with createTools' description and JSON Schema, exactly.
    const offered = (model.doGenerateCalls[0]!.tools ?? []) as { name: string; description?: string; inputSchema?: unknown }[];
    expect(offered.map((tool) => tool.name).sort()).toEqual(heph.hephTools.all.map((definition) => definition.name).sort());
    for (const definition of heph.hephTools.all) {
      expect(offered.find((tool) => tool.name === definition.name)).toMatchObject({ description: definition.description, inputSchema: definition.inputSchema });
    }
    expect(turns.length).toBe(4);
  });

  it.skipIf(skip)('Mastra\'s own command tools on the heph-backed process manager: a background server, its output, its kill; a foreground command', async () => {
    const { Agent, Workspace, HephJobsSandbox } = await load();
    const { mark, runtime, heph } = await setUp(mode);
    const oracle = newOracle();
    const foreground = newOracle();
    const sandbox = new HephJobsSandbox(runtime, { env: { HEPH_TEST_MARK: mark }, workingDirectory: tempDir() });
    const workspace = new Workspace({ sandbox });
    const command = `${oracle.prefix}exec ${JSON.stringify(process.execPath)} ${SERVER}`;
    let whileRunning: { processes: string[]; eof: boolean } | null = null;
    const { model, last } = await scriptedModel([
      () => ({ name: 'mastra_workspace_execute_command', args: { command, background: true } }),
      // The pid Mastra's tool answered with is the job's number: our job_status waits for the ready line.
      ([started]) => ({ name: 'job_status', args: { id: Number(/PID: (\d+)/.exec(started!.read)![1]), until: '^ready on port', wait: 30 } }),
      () => ({ name: 'mastra_workspace_get_process_output', args: { pid: '0' } }),
      () => {
        whileRunning = { processes: marked(mark), eof: oracle.closed };
        return { name: 'mastra_workspace_kill_process', args: { pid: '0' } };
      },
      // A foreground command whose leftover child the job's cleanup stops.
      () => ({ name: 'mastra_workspace_execute_command', args: { command: `${foreground.prefix}sleep 600 & echo out; echo err >&2; exit 3` } }),
    ]);
    const agent = new Agent({ id: 'sandbox', name: 'sandbox', instructions: 'Run the job.', model, tools: heph.tools, workspace });
    const answer = await agent.generate('Start the server, read it, stop it.', { maxSteps: 12 });
    expect(answer.text).toBe('Done.');
    await nothingLeft(oracle, mark);
    await foreground.waitEof(20_000);

    expect(whileRunning).not.toBeNull();
    expect(whileRunning!.eof).toBe(false);
    expect(whileRunning!.processes.some((cmd) => cmd.includes('ready-server.mjs')), whileRunning!.processes.join('\n')).toBe(true);

    const results = last();
    expect(results.map((r) => r.tool)).toEqual([
      'mastra_workspace_execute_command',
      'job_status',
      'mastra_workspace_get_process_output',
      'mastra_workspace_kill_process',
      'mastra_workspace_execute_command',
    ]);
    const [spawned, ready, output, killed, ran] = results;
    expect(spawned!.read).toBe('Started background process (PID: 0)');
    expect(ready!.read).toBe(recorder.calls[0]!.result!.text);
    expect(ready!.read).toMatch(/^job 0 running [\s\S]*\n> ready on port \d+\n/);
    const port = /ready on port (\d+)/.exec(ready!.read)![1];
    expect(output!.read).toBe(`ready on port ${port}\n`);
    expect(killed!.read).toBe(`Process 0 has been killed.\n\n--- stdout (last output) ---\nready on port ${port}\n`);
    expect(ran!.read).toBe('stdout:\nout\n\n\nstderr:\nerr\n\nExit code: 3');
    expect(results.every((r) => !r.isError)).toBe(true);
    // The same jobs, as heph-jobs knows them: the server killed by SIGKILL (Mastra's contract), the foreground command exited 3.
    expect(runtime.list().map((job) => [job.id, job.state, job.exitCode, job.signal])).toEqual([
      [0, 'killed', null, 'SIGKILL'],
      [1, 'exited', 3, null],
    ]);
    expect(await sandbox.processes.list()).toEqual([]);
  });
});

const mode = MODES[0]!;

describe.skipIf(TOO_OLD)(`the Mastra adapter: refusals, cancellation, the process handle (${mode})`, () => {
  it('a busy lock, an unknown job, refused input and a denial reach the model as error-text results with the tools\' text', async () => {
    const { Agent } = await load();
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
    const agent = new Agent({ id: 'jobs', name: 'jobs', instructions: 'Run the job.', model, tools: heph.tools });
    expect((await agent.generate('Go.', { maxSteps: 10 })).text).toBe('Done.');

    const results = last();
    expect(results.map((r) => r.tool)).toEqual(['job_status', 'background', 'job_status', 'job_input', 'job_kill', 'job_status']);
    expectReadAsGiven(results);
    expect(results.map((r) => r.isError)).toEqual([true, false, true, true, true, true]);
    const [unknown, , busy, input, denied, bad] = results.map((r) => r.read);
    expect(unknown).toMatch(/^job_status: there is no job 7\./);
    expect(busy).toMatch(/^job_status cannot run: its lock rules need worktree:main, and job 0 .* Ask the user to run \/job-kill 0,/);
    expect(input).toMatch(/^job_input: /);
    expect(denied).toMatch(/^The user denied job_kill\(.*\); nothing was stopped\./);
    // Bad input is the tools' own answer (Mastra let it through unchecked), naming the field.
    expect(bad).toMatch(/lines/);
    expect(asked.map((request) => request.tool)).toEqual(['background', 'job_input', 'job_kill']);

    expect(oracle.closed).toBe(false);
    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it('the run\'s abortSignal ends a wait at once with the job as it is; the job runs on until it is stopped', async () => {
    const { Agent } = await load();
    const { mark, runtime, heph } = await setUp(mode);
    const oracle = newOracle();
    const { model } = await scriptedModel([
      () => ({ name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 0.2, until: 'never printed' } }),
      () => ({ name: 'job_status', args: { id: 0, wait: 600, until: 'never printed' } }),
    ]);
    const agent = new Agent({ id: 'jobs', name: 'jobs', instructions: 'Run the job.', model, tools: heph.tools });
    const stop = new AbortController();
    const run = agent.generate('Go.', { maxSteps: 10, abortSignal: stop.signal }).catch((error: unknown) => error);
    await waitUntil(() => recorder.calls.length === 3, 'the long wait to be under way', 30_000);
    const long = recorder.calls[2]!;
    expect(long.result).toBeNull();
    expect(long.signal).toBeInstanceOf(AbortSignal);
    stop.abort();
    await waitUntil(() => long.result !== null, 'the aborted wait to answer', 20_000);
    await run;

    // Negative control: the short wait ran its course and says so; the aborted one did not.
    expect(recorder.calls[1]!.result!.job?.waited).toMatchObject({ kind: 'timed-out' });
    expect(long.signal!.aborted).toBe(true);
    expect(long.result!.job).toMatchObject({ id: 0, state: 'running', waited: null });
    expect(runtime.list()[0]?.state).toBe('running');
    expect(oracle.closed).toBe(false);

    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  });

  it('the process handle: streams as lines come (an unfinished line too), takes stdin, tells exit codes, a timeout and a kill', async () => {
    const { HephJobsProcessManager, HephJobsSandbox } = await load();
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const sandbox = new HephJobsSandbox(runtime);
    const manager: InstanceType<typeof HephJobsProcessManager> = sandbox.processes;

    // stdin, an unfinished line passed on as it is, then completed; stderr apart.
    const chunks: string[] = [];
    let prompted: () => void = () => undefined;
    const prompt = new Promise<void>((resolve) => (prompted = resolve));
    const asking = await manager.spawn("printf 'name? '; read name; echo \"hello $name\"; echo bye >&2", {
      onStdout: (data) => {
        chunks.push(data);
        prompted();
      },
    });
    await prompt;
    expect(asking.stdout).toBe('name? ');
    await asking.sendStdin('heph\n');
    const answered = await asking.wait();
    expect(answered).toMatchObject({ success: true, exitCode: 0, stdout: 'name? hello heph\n', stderr: 'bye\n', killed: false, timedOut: false });
    expect(chunks).toEqual(['name? ', 'hello heph\n']);

    // Exit codes, a timeout (124, as Mastra's local sandbox), and a kill (128 + SIGKILL, Mastra's contract).
    expect(await (await manager.spawn('exit 7', { stdinMode: 'ignore' })).wait()).toMatchObject({ success: false, exitCode: 7 });
    const slow = await manager.spawn('sleep 600', { timeout: 300, stdinMode: 'ignore' });
    expect(await slow.wait()).toMatchObject({ exitCode: 124, timedOut: true, killed: true });
    expect(slow.stderr).toBe('\nProcess timed out after 300ms');
    const server = await manager.spawn('echo up; exec sleep 600', { stdinMode: 'ignore' });
    expect(await server.wait({ onStdout: () => void manager.kill(server.pid) })).toMatchObject({ exitCode: 137, killed: true, stdout: 'up\n' });
    expect(runtime.list().find((job) => job.id === Number(server.pid))).toMatchObject({ state: 'killed', signal: 'SIGKILL' });
    await expect(server.sendStdin('x')).rejects.toThrow(/has already exited with code 137/);
    expect(await server.kill()).toBe(false);

    // A job heph-jobs' own tools started is found by its number, read from its first line, and
    // killed; by a manager with killSignal TERM, with SIGTERM and the grace.
    const gentle = new HephJobsSandbox(runtime, { killSignal: 'TERM' }).processes;
    expect(() => new HephJobsSandbox(runtime, { killSignal: 'HUP' as 'TERM' })).toThrow(/^killSignal must be "KILL" or "TERM"; received .*HUP/);
    const direct = await runtime.background({ command: 'echo direct; exec sleep 600' });
    const adopted = (await gentle.get(String(direct.id)))!;
    expect(await gentle.list()).toContainEqual({ pid: String(direct.id), command: 'echo direct; exec sleep 600', running: true });
    expect(await adopted.wait({ onStdout: () => void gentle.kill(adopted.pid) })).toMatchObject({ exitCode: 143, stdout: 'direct\n' });
    expect(runtime.list().find((job) => job.id === direct.id)).toMatchObject({ state: 'killed', signal: 'SIGTERM', cleanedUp: true });
    expect(await manager.get('999')).toBeUndefined();
    expect(await manager.get('not a job')).toBeUndefined();

    // A job started by heph-jobs' tools that still waits for its locks is followed from its start.
    const port = uniquePort();
    const holder = await runtime.background({ command: 'exec sleep 600', locks: [port] });
    const queued = await runtime.background({ command: 'echo got it', locks: [port], answerWithinMs: 0 });
    expect(queued.state).toBe('waiting');
    const reads = vi.spyOn(runtime, 'status');
    const follower = (await manager.get(String(queued.id)))!;
    expect(follower.exitCode).toBeUndefined();
    await runtime.kill(holder.id);
    expect(await follower.wait()).toMatchObject({ exitCode: 0, stdout: 'got it\n' });
    // It waited for the start, not in a loop of reads that answer at once (a job not started has no output to wait on).
    expect(reads.mock.calls.filter(([id]) => id === queued.id).length).toBeLessThan(5);
    reads.mockRestore();

    // A thousand lines at once all arrive, in order.
    const many = await manager.spawn('seq 1 1000', { stdinMode: 'ignore' });
    expect((await many.wait()).stdout).toBe(`${Array.from({ length: 1000 }, (_, i) => i + 1).join('\n')}\n`);
  });
});
