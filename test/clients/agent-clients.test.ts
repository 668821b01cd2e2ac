/**
 * `heph-jobs mcp` in the three agent CLIs people run it from (Claude Code, Codex, Gemini CLI;
 * pinned in test/helpers/agent-clients.mjs and installed once into a cache), each run headless
 * against a scripted model API on 127.0.0.1 that records what the client hands its model: the
 * report text as the server wrote it (the tap between client and server shows what it wrote),
 * a wait longer than the client's timeout answered in time, Gemini CLI's added field accepted, and
 * nothing left running after the client exits or is SIGKILLed (kernel truth: the FIFO every job
 * process inherits reaches EOF, and /proc holds no process with the run's HEPH_TEST_MARK: tap,
 * server, supervisor, jobs). A client that cannot run here is skipped with the reason printed;
 * HEPH_REQUIRE_CLIENTS=1 makes that a failure.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CLIENTS, ensureClient, recordTranscript, startClient } from '../helpers/agent-clients.mjs';
import { EofOracle, processesWithEnv, see, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { modeRows, type Mode } from '../helpers/modes.js';
import { signalIfSame } from '../helpers/signal.js';

type Client = (typeof CLIENTS)[number];
type Run = Awaited<ReturnType<typeof startClient>>;
interface Result {
  tool: string;
  args: Record<string, unknown>;
  read: string;
  isError: boolean;
}
interface Action {
  call?: { name: string; args: Record<string, unknown> };
  text?: string;
}

const REQUIRE = process.env.HEPH_REQUIRE_CLIENTS === '1';
const installs = new Map(CLIENTS.map((client) => [client.id, ensureClient(client)] as const));
for (const client of CLIENTS) {
  const install = installs.get(client.id)!;
  if ('reason' in install) console.warn(`test/clients: ${REQUIRE ? 'cannot run' : 'skipping'} ${client.name} ${client.version}: ${install.reason}`);
}

/** The client's timeout for a tool call, lowered by its own setting, and the server's wait cap below it. */
const CLIENT_TIMEOUT_MS = 6_000;
const CAP_MS = 1_500;
const STDERR_LINE = 'warning: "disk" almost full';

interface Started {
  run: Run;
  mark: string;
  client: SeenProcess;
}
const started: Started[] = [];
const oracles: EofOracle[] = [];

afterEach(async () => {
  for (const { run, mark, client } of started.splice(0)) {
    signalIfSame(client, 'SIGKILL');
    await run.exited;
    // The server stops its jobs when the client's pipe closes; what is left after that is a failure
    // the test has already reported, and is killed here by the pids the mark names.
    try {
      await waitUntil(() => processesWithEnv(`HEPH_TEST_MARK=${mark}`).length === 0, 'the run\'s processes to be gone', 20_000);
    } finally {
      for (const pid of processesWithEnv(`HEPH_TEST_MARK=${mark}`)) {
        try {
          signalIfSame(see(pid), 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      await run.dispose();
    }
  }
  for (const oracle of oracles.splice(0)) oracle.dispose();
});

function newOracle(): EofOracle {
  const oracle = new EofOracle();
  oracles.push(oracle);
  return oracle;
}

async function start(client: Client, options: { script: (state: { results: Result[] }) => Action; mode?: Mode; capMs: number; structured?: boolean; toolTimeoutMs?: number }) {
  const install = installs.get(client.id)!;
  if ('reason' in install) throw new Error(`${client.name} ${client.version} cannot run here: ${install.reason}`);
  const mark = randomUUID();
  const run = await startClient(client, install, {
    script: options.script,
    mode: options.mode ?? 'cgroup',
    serverArgs: options.structured ? ['--structured'] : [],
    env: { HEPH_TEST_MARK: mark, HEPH_JOBS_MCP_WAIT_CAP_MS: String(options.capMs) },
    toolTimeoutMs: options.toolTimeoutMs ?? CLIENT_TIMEOUT_MS,
  });
  const entry = { run, mark, client: see(run.child.pid!) };
  started.push(entry);
  return entry;
}

/** Calls as a model of this client makes them: Gemini CLI's model sets the field its client adds to every tool. */
function asModel(client: Client, name: string, args: Record<string, unknown>): Action {
  return { call: { name, args: client.id === 'gemini-cli' ? { ...args, wait_for_previous: true } : args } };
}

/** A script of calls, one per turn, then a closing text. */
function script(steps: ((results: Result[]) => Action)[]) {
  return ({ results }: { results: Result[] }): Action => (results.length < steps.length ? steps[results.length]!(results) : { text: 'Done.' });
}

/** The tool results of the run's last agent turn (the whole conversation's). */
function lastResults(run: Run): Result[] {
  return (run.fake.turns.at(-1)?.results ?? []) as Result[];
}

async function exitedCleanly(run: Run, mark: string, oracle: EofOracle) {
  const exit = await run.exited;
  expect(exit, run.transcript()).toEqual({ code: 0, signal: null });
  await oracle.waitEof(20_000).catch((error: Error) => {
    throw new Error(`${error.message}; still running: ${JSON.stringify(marked(mark))}\n${run.transcript()}`);
  });
  await waitUntil(() => processesWithEnv(`HEPH_TEST_MARK=${mark}`).length === 0, 'no process with the run\'s mark', 20_000, () => marked(mark));
}

/** What runs under the mark now, by command line (the negative control of the /proc oracle). */
function marked(mark: string): string[] {
  return processesWithEnv(`HEPH_TEST_MARK=${mark}`).map((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    } catch {
      return '';
    }
  });
}

describe.each(CLIENTS.map((client) => [`${client.name} ${client.version}`, client] as const))('%s', (_, client) => {
  const install = installs.get(client.id)!;
  const skip = 'reason' in install && !REQUIRE;

  it.skipIf(skip)('reads each report as the server wrote it, a long wait answered in time, nothing left running after it exits', async () => {
    const oracle = newOracle();
    let whileRunning: { processes: string[]; eof: boolean } | null = null;
    const { run, mark } = await start(client, {
      capMs: CAP_MS,
      script: script([
        () => asModel(client, 'background', { command: `${oracle.prefix}echo up; echo '${STDERR_LINE}' >&2; exec sleep 600`, until: 'up', wait: 10 }),
        () => {
          whileRunning = { processes: marked(mark), eof: oracle.closed };
          return asModel(client, 'job_status', { id: 0, wait: 30 });
        },
        () => asModel(client, 'job_kill', { id: 0 }),
      ]),
    });
    await exitedCleanly(run, mark, oracle);

    // Negative control of both oracles: while the job ran they saw it (and the supervisor).
    expect(whileRunning, run.transcript()).not.toBeNull();
    expect(whileRunning!.eof).toBe(false);
    expect(whileRunning!.processes.some((cmd) => cmd.includes('sleep 600'))).toBe(true);
    expect(whileRunning!.processes.some((cmd) => /supervisor/.test(cmd)), whileRunning!.processes.join('\n')).toBe(true);

    const results = lastResults(run);
    const calls = run.calls();
    expect(results.map((r) => r.tool), run.transcript()).toEqual(['background', 'job_status', 'job_kill']);
    expect(calls.map((c) => c.name)).toEqual(['background', 'job_status', 'job_kill']);
    for (const [i, result] of results.entries()) {
      const call = calls[i]!;
      expect(call.result?.isError, call.text ?? JSON.stringify(call.result)).toBeFalsy();
      expect(result.isError).toBe(false);
      // The server's text is the whole result, and the model reads it as written: no JSON string
      // around it, no escaped newline or quote.
      expect(typeof call.text).toBe('string');
      expect(client.unwrap(result.read), `${client.name} showed its model:\n${result.read}`).toBe(call.text);
      expect(result.read).not.toContain('\\"');
      expect(result.read).not.toContain('\\n');
    }
    const [background, status, kill] = results.map((r) => client.unwrap(r.read)!);
    expect(background).toContain('\n> up\n');
    expect(background).toContain(`\n! ${STDERR_LINE}\n`);
    expect(background).toContain('job_status {"id": 0} reads more; job_kill {"id": 0} stops it.');
    // Asked 30 s, cut at the cap below the client's timeout: answered by the server, naming the call that waits on.
    expect(status).toMatch(/^job 0 running /);
    expect(status).toContain(`(the wait was cut at ${CAP_MS / 1000}s of the 30s asked, so that the call answers before its client gives up; job_status {"id": 0, "wait": 28.5} waits on)`);
    expect(kill).toMatch(/^job 0 killed SIGTERM /);

    if (client.id === 'gemini-cli') {
      // Gemini CLI adds the field to every tool it offers; the calls carried it and were served.
      const declarations = JSON.stringify(run.fake.requests.at(-1)!.body);
      expect(declarations).toContain('wait_for_previous');
      for (const call of calls) expect(call.args).toHaveProperty('wait_for_previous', true);
    }
    if (client.id === 'claude-code') {
      // Claude Code defers the tools: the model first sees their names and the server's instructions.
      const deferred = run.fake.turns[0] as { deferred?: string[] };
      expect(deferred.deferred).toEqual(expect.arrayContaining(['mcp__heph-jobs__background', 'mcp__heph-jobs__job_status', 'mcp__heph-jobs__job_kill']));
      expect(JSON.stringify(run.fake.requests[0]!.body)).toContain('instead of your shell tool');
    }
    const file = recordTranscript(
      client,
      results.map((result, i) => ({ tool: result.tool, args: result.args, read: result.read, server: calls[i]!.text, readChars: result.read.length, serverChars: calls[i]!.text!.length })),
    );
    console.log(`${client.name} ${client.version}: characters the model read / the server's text: ${results.map((r, i) => `${r.tool} ${r.read.length}/${calls[i]!.text!.length}`).join(', ')} (${file})`);
  });

  it.skipIf(skip)('negative control: with --structured the oracle tells what the client shows apart from the text', async () => {
    const oracle = newOracle();
    const { run, mark } = await start(client, {
      capMs: CAP_MS,
      structured: true,
      script: script([() => asModel(client, 'background', { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 10 })]),
    });
    await exitedCleanly(run, mark, oracle);
    const [result] = lastResults(run);
    const [call] = run.calls();
    expect(result, run.transcript()).toBeDefined();
    expect(call!.result?.structuredContent).toBeDefined();
    if (client.id === 'gemini-cli') {
      // Gemini CLI shows the text even when the facts come with it.
      expect(client.unwrap(result!.read)).toBe(call!.text);
    } else {
      // Claude Code and Codex show JSON.stringify(structuredContent): the text escaped inside it.
      expect(client.unwrap(result!.read)).not.toBe(call!.text);
      expect(result!.read).toContain(JSON.stringify(call!.text).slice(1, 40));
      expect(result!.read).toContain('\\n');
    }
  });

  it.skipIf(skip)('negative control: a cap above the client\'s timeout lets the client cut the call', async () => {
    const oracle = newOracle();
    const shortTimeoutMs = 3_000;
    const { run, mark } = await start(client, {
      capMs: 60_000,
      toolTimeoutMs: shortTimeoutMs,
      script: script([
        () => asModel(client, 'background', { command: `${oracle.prefix}echo up; exec sleep 600`, until: 'up', wait: 10 }),
        () => asModel(client, 'job_status', { id: 0, wait: 30 }),
      ]),
    });
    await exitedCleanly(run, mark, oracle);
    const results = lastResults(run);
    expect(results.map((r) => r.tool), run.transcript()).toEqual(['background', 'job_status']);
    const texts = run.calls().map((call) => call.text).filter((text) => text !== null);
    // What the model read is the client's own timeout, not a report (and not the cut wait's hint).
    expect(texts).not.toContain(client.unwrap(results[1]!.read));
    expect(results[1]!.read).not.toContain('job 0 running');
    expect(results[1]!.read).not.toContain('waits on');
    console.log(`${client.name}: a call past its timeout reads ${JSON.stringify(results[1]!.read.slice(0, 300))}`);
  });

  describe.each(modeRows())('containment %s', (mode, modeSkip) => {
    it.skipIf(skip || modeSkip)('SIGKILL of the client during a wait leaves nothing running', async () => {
      const oracle = newOracle();
      const { run, mark, client: seen } = await start(client, {
        mode,
        capMs: 60_000,
        toolTimeoutMs: 120_000,
        script: script([
          () => asModel(client, 'background', { command: `${oracle.prefix}echo up; sh -c 'exec sleep 600' & exec sleep 600`, until: 'up', wait: 10 }),
          () => asModel(client, 'job_status', { id: 0, wait: 60 }),
        ]),
      });
      await waitUntil(() => run.calls().some((call) => call.name === 'job_status'), 'the job_status call to reach the server', 30_000, () => run.transcript());
      const before = marked(mark);
      expect(before.some((cmd) => cmd.includes('sleep 600')), before.join('\n')).toBe(true);
      expect(oracle.closed).toBe(false);
      expect(signalIfSame(seen, 'SIGKILL')).toBe(true);
      expect(await run.exited).toEqual({ code: null, signal: 'SIGKILL' });
      await oracle.waitEof(20_000);
      await waitUntil(() => processesWithEnv(`HEPH_TEST_MARK=${mark}`).length === 0, 'no process with the run\'s mark', 20_000, () => marked(mark));
    });
  });
});
