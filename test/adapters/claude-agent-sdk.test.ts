/**
 * `heph-jobs/claude-agent-sdk` in a whole `query()` loop of the real Claude Agent SDK (its bundled
 * Claude Code runs headless against the scripted Messages API of fake-model.mjs on 127.0.0.1):
 * what the model read of each call is the text createTools gave (recorded by wrapping the
 * definitions createTools returns), with the error flag on refusals; level-2 calls were asked of
 * heph-jobs' approver; an `interrupt()` ends a wait with the job as it is; and nothing is left
 * running (kernel truth: the FIFO every job process inherits reaches EOF, and /proc holds no
 * process with the run's HEPH_TEST_MARK, Claude Code's included), each oracle seen positive first.
 */
import type { Recorded } from '../helpers/recorded-tools.js';
import { approver, marked, newOracle, nothingLeft } from '../helpers/adapter-runs.js';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { query, type CanUseTool, type Query, type SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { claudeAgentSdkServer } from '../../src/adapters/claude-agent-sdk.js';
import { startFakeModel } from '../helpers/fake-model.mjs';
import { processesWithEnv, see, waitUntil } from '../helpers/kernel.js';
import { MODES, modeRows, type Mode } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';
import { signalIfSame } from '../helpers/signal.js';

const recorder = vi.hoisted(() => ({ calls: [] as Recorded[] }));
vi.mock('../../src/tools/index.js', async (importOriginal) =>
  (await import('../helpers/recorded-tools.js')).recordingTools(await importOriginal(), recorder.calls),
);

type Fake = Awaited<ReturnType<typeof startFakeModel>>;
/** A tool result as the fake model API received it from Claude Code (fake-model.mjs). */
interface Read {
  tool: string;
  args: Record<string, unknown>;
  read: string;
  isError: boolean;
}
interface Action {
  call?: { name: string; args: Record<string, unknown> };
  text?: string;
}

const SERVER = path.join(FIXTURES, 'ready-server.mjs');
const open: { query: Query; fake: Fake; mark: string }[] = [];
afterEach(async () => {
  for (const { query: running, fake, mark } of open.splice(0)) {
    running.close();
    await fake.close();
    // What a failed test left is killed here by the pids its mark names (the runtime's close stops the jobs).
    for (const pid of processesWithEnv(`HEPH_TEST_MARK=${mark}`)) {
      try {
        signalIfSame(see(pid), 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  recorder.calls.splice(0);
});



/** A script of calls, one per turn, then a closing text. */
function script(steps: ((results: Read[]) => Action)[]) {
  return ({ results }: { results: Read[] }): Action => (results.length < steps.length ? steps[results.length]!(results) : { text: 'Done.' });
}

/** Starts a `query()` of Claude Code against `fake` with the adapter's server; the run's processes carry `mark`. */
function startQuery(heph: ReturnType<typeof claudeAgentSdkServer>, fake: Fake, mark: string, canUseTool?: CanUseTool) {
  const dir = tempDir();
  let stderr = '';
  const running = query({
    prompt: 'Start the server, read it, stop it.',
    options: {
      mcpServers: heph.mcpServers,
      allowedTools: heph.allowedTools,
      ...(canUseTool ? { canUseTool } : {}),
      tools: [],
      cwd: dir,
      settingSources: [],
      persistSession: false,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        HEPH_TEST_MARK: mark,
        ANTHROPIC_BASE_URL: fake.url,
        ANTHROPIC_API_KEY: 'sk-ant-fake',
        CLAUDE_CONFIG_DIR: path.join(dir, '.claude'),
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      stderr: (data) => (stderr += data),
    },
  });
  open.push({ query: running, fake, mark });
  const messages: SDKMessage[] = [];
  const ended = (async () => {
    try {
      for await (const message of running) messages.push(message);
      return null;
    } catch (error) {
      return error as Error;
    }
  })();
  const transcript = () =>
    `messages:\n${messages.map((m) => JSON.stringify(m).slice(0, 400)).join('\n')}\nstderr:\n${stderr.slice(-3000)}\nrequests:\n${fake.requests.map((r) => `${r.method} ${r.url}`).join('\n')}`;
  return { query: running, messages, ended, transcript };
}

/** The tool results the model read, as its last request to the fake API held them. */
function lastResults(fake: Fake): Read[] {
  return (fake.turns.at(-1)?.results ?? []) as Read[];
}



async function setUp(mode: Mode, options: { deny?: string[]; rules?: Record<string, string[]> } = {}) {
  const mark = randomUUID();
  const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
  const { approve, asked } = approver(options.deny);
  const heph = claudeAgentSdkServer(runtime, {
    approve,
    ...(options.rules ? { rules: options.rules } : {}),
    defaults: { env: { ...process.env, HEPH_TEST_MARK: mark }, ref: 'main' },
  });
  return { mark, runtime, heph, asked };
}

describe.each(modeRows())('the Claude Agent SDK adapter in a query() loop (%s)', (mode, skip) => {
  it.skipIf(skip)('starts a server, waits for its ready line, reads it, kills it: the model reads each text as createTools gave it', async () => {
    const { mark, heph, asked } = await setUp(mode);
    const oracle = newOracle();
    const command = `${oracle.prefix}exec ${JSON.stringify(process.execPath)} ${SERVER}`;
    let whileRunning: { processes: string[]; eof: boolean } | null = null;
    const fake = await startFakeModel(
      'anthropic',
      script([
        () => ({ call: { name: 'background', args: { command, until: '^ready on port', wait: 30 } } }),
        () => {
          whileRunning = { processes: marked(mark), eof: oracle.closed };
          return { call: { name: 'job_status', args: { id: 0 } } };
        },
        () => ({ call: { name: 'job_kill', args: { id: 0 } } }),
      ]),
    );
    const run = startQuery(heph, fake, mark);
    const error = await run.ended;
    expect(error, run.transcript()).toBeNull();
    expect(run.messages.at(-1), run.transcript()).toMatchObject({ type: 'result', subtype: 'success', result: 'Done.' });
    await nothingLeft(oracle, mark);

    // Negative control of both oracles: while the job ran they saw it, and Claude Code.
    expect(whileRunning, run.transcript()).not.toBeNull();
    expect(whileRunning!.eof).toBe(false);
    expect(whileRunning!.processes.some((cmd) => cmd.includes('ready-server.mjs')), whileRunning!.processes.join('\n')).toBe(true);
    expect(whileRunning!.processes.some((cmd) => /claude-agent-sdk-[a-z0-9-]+\/claude\b/.test(cmd)), whileRunning!.processes.join('\n')).toBe(true);

    const results = lastResults(fake);
    expect(results.map((r) => r.tool), run.transcript()).toEqual(['background', 'job_status', 'job_kill']);
    expect(recorder.calls.map((c) => c.name)).toEqual(['background', 'job_status', 'job_kill']);
    for (const [i, result] of results.entries()) {
      const given = recorder.calls[i]!.result!;
      expect(given.isError, given.text).toBe(false);
      // The text is the whole result, as written: no JSON around it, no structured duplicate.
      expect(result.read).toBe(given.text);
      expect(result.isError).toBe(false);
    }
    const [background, status, kill] = results.map((r) => r.read);
    expect(background).toMatch(/^job 0 running /);
    expect(background).toMatch(/\n> ready on port \d+\n/);
    expect(status).toMatch(/^job 0 running /);
    expect(status).toMatch(/\n> ready on port \d+\n/);
    expect(kill).toMatch(/^job 0 killed SIGTERM /);

    // Level 2 went to heph-jobs' approver with the exact pattern; level 0 did not.
    expect(asked.map((request) => request.tool)).toEqual(['background', 'job_kill']);
    expect(asked[0]!.pattern).toBe(`background(${command})`);

    // The model was offered each tool with createTools' description and JSON Schema, exactly.
    const offered = fake.requests
      .map((request) => (request.body as { tools?: { name: string; description: string; input_schema: object }[] }).tools ?? [])
      .find((tools) => tools.some((tool) => tool.name === 'mcp__heph-jobs__background'))!;
    for (const definition of heph.hephTools.all) {
      const tool = offered.find((candidate) => candidate.name === `mcp__heph-jobs__${definition.name}`);
      expect(tool, definition.name).toEqual({ name: `mcp__heph-jobs__${definition.name}`, description: definition.description, input_schema: definition.inputSchema });
    }
  }, 120_000);
});

const mode = MODES[0]!;

describe(`the Claude Agent SDK adapter: refusals and cancellation (${mode})`, () => {
  it('a busy lock, an unknown job, refused input and a denial reach the model as error results with the tools\' text', async () => {
    const rules = { background: ['worktree:{ref}'], job_status: ['worktree:{ref}'] };
    const { mark, heph, asked } = await setUp(mode, { deny: ['job_kill'], rules });
    const oracle = newOracle();
    const command = `${oracle.prefix}echo up; exec sleep 600`;
    const fake = await startFakeModel(
      'anthropic',
      script([
        () => ({ call: { name: 'job_status', args: { id: 7 } } }),
        () => ({ call: { name: 'background', args: { command, until: 'up', wait: 30 } } }),
        () => ({ call: { name: 'job_status', args: { id: 0 } } }),
        () => ({ call: { name: 'job_input', args: { id: 0, text: 'hello\n' } } }),
        () => ({ call: { name: 'job_kill', args: { id: 0 } } }),
      ]),
    );
    const run = startQuery(heph, fake, mark);
    expect(await run.ended, run.transcript()).toBeNull();

    const results = lastResults(fake);
    expect(results.map((r) => r.tool), run.transcript()).toEqual(['job_status', 'background', 'job_status', 'job_input', 'job_kill']);
    for (const [i, result] of results.entries()) {
      const given = recorder.calls[i]!.result!;
      expect(result.read).toBe(given.text);
      expect(result.isError, result.read).toBe(given.isError);
    }
    expect(results.map((r) => r.isError)).toEqual([true, false, true, true, true]);
    const [unknown, , busy, input, denied] = results.map((r) => r.read);
    expect(unknown).toMatch(/^job_status: there is no job 7\./);
    expect(busy).toMatch(/^job_status cannot run: its lock rules need worktree:main, and job 0 .* Ask the user to run \/job-kill 0,/);
    expect(input).toMatch(/^job_input: /);
    expect(input).toContain('stdin');
    expect(denied).toMatch(/^The user denied job_kill\(.*\); nothing was stopped\./);
    expect(asked.map((request) => request.tool)).toEqual(['background', 'job_input', 'job_kill']);

    // The denial stopped nothing: the job runs until the user's /job-kill.
    expect(oracle.closed).toBe(false);
    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  }, 120_000);

  it('an interrupt() ends a wait at once with the job as it is; the job runs on until it is stopped', async () => {
    const { mark, runtime, heph } = await setUp(mode);
    const oracle = newOracle();
    const fake = await startFakeModel(
      'anthropic',
      script([
        () => ({ call: { name: 'background', args: { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 30 } } }),
        () => ({ call: { name: 'job_status', args: { id: 0, wait: 0.2, until: 'never printed' } } }),
        () => ({ call: { name: 'job_status', args: { id: 0, wait: 600, until: 'never printed' } } }),
      ]),
    );
    const run = startQuery(heph, fake, mark);
    await waitUntil(() => recorder.calls.length === 3, 'the long wait to be under way', 60_000, () => run.transcript());
    const long = recorder.calls[2]!;
    expect(long.result).toBeNull();
    expect(long.signal).toBeInstanceOf(AbortSignal);
    await run.query.interrupt();
    await waitUntil(() => long.result !== null, 'the interrupted wait to answer', 20_000, () => run.transcript());
    await run.ended;

    // Negative control: the short wait ran its course and says so; the interrupted one did not.
    expect(recorder.calls[1]!.result!.job?.waited).toMatchObject({ kind: 'timed-out' });
    expect(long.signal!.aborted).toBe(true);
    expect(long.result!.isError).toBe(false);
    expect(long.result!.job).toMatchObject({ id: 0, state: 'running', waited: null });
    expect(runtime.list()[0]?.state).toBe('running');
    expect(oracle.closed).toBe(false);

    expect(await heph.hephTools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
    await nothingLeft(oracle, mark);
  }, 120_000);

  it("approvals: 'canUseTool': Claude Code's permission step asks the host with the exact pattern; its always holds for that pattern only; a call it did not ask about is refused", async () => {
    const mark = randomUUID();
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const heph = claudeAgentSdkServer(runtime, { approvals: 'canUseTool', defaults: { env: { ...process.env, HEPH_TEST_MARK: mark } } });
    expect(heph.allowedTools).toEqual(['mcp__heph-jobs__job_status']);
    expect(() => claudeAgentSdkServer(runtime, { approvals: 'canUseTool', approve: async () => 'once' })).toThrow(/^approve is not asked with approvals: 'canUseTool'/);
    expect(() => claudeAgentSdkServer(runtime, { approvals: 'ask' as 'canUseTool' })).toThrow(/^approvals must be "approver" or "canUseTool"; received/);

    const oracle = newOracle();
    const command = `${oracle.prefix}echo up; exec sleep 600`;
    // The host: "always" (Claude Code's suggestions kept) for the command, no to the first kill, yes to the second.
    const asked: { tool: string; title: string | undefined }[] = [];
    const host: CanUseTool = async (tool, input, options) => {
      asked.push({ tool, title: options.title });
      if (tool.endsWith('__background')) return { behavior: 'allow', updatedInput: input, updatedPermissions: options.suggestions ?? [] };
      return asked.filter((entry) => entry.tool === tool).length === 1 ? { behavior: 'deny', message: '' } : { behavior: 'allow', updatedInput: input };
    };
    const fake = await startFakeModel(
      'anthropic',
      script([
        () => ({ call: { name: 'background', args: { command, until: 'up' } } }),
        () => ({ call: { name: 'background', args: { command, until: 'up' } } }),
        () => ({ call: { name: 'job_kill', args: { id: 0 } } }),
        () => ({ call: { name: 'job_kill', args: { id: 0 } } }),
        () => ({ call: { name: 'job_kill', args: { id: 1 } } }),
        () => ({ call: { name: 'job_kill', args: { id: 1 } } }),
      ]),
    );
    const run = startQuery(heph, fake, mark, heph.canUseTool(host));
    expect(await run.ended, run.transcript()).toBeNull();

    const reads = lastResults(fake).map((r) => [r.tool, r.isError, r.read.split('\n')[0]]);
    expect(reads, run.transcript()).toEqual([
      ['background', false, expect.stringMatching(/^job 0 running /)],
      ['background', false, expect.stringMatching(/^job 1 running /)],
      ['job_kill', true, `The user denied job_kill(${command}); nothing was stopped. Do not repeat this call; ask the user what to do instead.`],
      ['job_kill', false, expect.stringMatching(/^job 0 killed SIGTERM /)],
      ['job_kill', false, expect.stringMatching(/^job 1 killed SIGTERM /)],
      // An ended job: nothing to act on, so nobody is asked.
      ['job_kill', false, expect.stringMatching(/^job 1 killed SIGTERM /)],
    ]);
    // Asked: the first start only (its "always" covered the second), and each kill of a running job.
    expect(asked).toEqual([
      { tool: 'mcp__heph-jobs__background', title: `background(${command})` },
      { tool: 'mcp__heph-jobs__job_kill', title: `job_kill(${command})` },
      { tool: 'mcp__heph-jobs__job_kill', title: `job_kill(${command})` },
      { tool: 'mcp__heph-jobs__job_kill', title: `job_kill(${command})` },
    ]);
    await nothingLeft(oracle, mark);

    // Negative control of the permission step: a level-2 call Claude Code did not ask about is refused in the tool.
    const direct = await heph.hephTools.background.call({ command: 'echo unasked' });
    expect(direct.text).toMatch(/^background is refused: asking the user to approve background\(echo unasked\) failed \(Claude Code did not ask the host's canUseTool about this call/);
    expect(runtime.list()).toHaveLength(2);
  }, 120_000);
});
