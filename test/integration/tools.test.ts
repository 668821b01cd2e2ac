/**
 * The three tools and `/job-kill` as the model and the user see them, against real supervisors and
 * real processes: what `background` answers, the cap, `job_kill`'s final report, `close()`, the
 * call's context, exact permission patterns, and lock rules. Death is checked against kernel truth
 * (a FIFO every job process inherits reaching EOF); nothing waits on a sleep.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTools, type ApprovalAnswer, type ApprovalRequest, type JobRuntime } from '../../src/index.js';
import { childrenOf } from '../../supervisor/platform/procfs.js';
import { EofOracle, isRunning } from '../helpers/kernel.js';
import { waitForLines, within } from '../helpers/hardening.js';
import { normalizeResources } from '../../src/locks/index.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { killSupervisor, settledLostCleanups, supervisorInstance, supervisorPid, waitFor, toolPort } from '../../src/testing.js';

/** An approver that answers from a script (default "once") and records every question. */
function approver(answers: Record<string, ApprovalAnswer> = {}, fallback: ApprovalAnswer = 'once') {
  const asked: ApprovalRequest[] = [];
  const approve = async (request: ApprovalRequest): Promise<ApprovalAnswer> => {
    asked.push(request);
    return answers[request.pattern] ?? fallback;
  };
  return { approve, asked, patterns: () => asked.map((request) => request.pattern) };
}

/** Waits until every process of job `id` is gone and reaped (the runtime's cleaned-up event). */
async function waitCleanedUp(runtime: JobRuntime, id: number, ms = 20_000): Promise<void> {
  const done = await waitFor(runtime, () => runtime.list().find((job) => job.id === id)?.cleanedUp === true, ms);
  if (!done) throw new Error(`job ${id} not cleaned up after ${ms} ms; list:\n${runtime.list().map((job) => job.header).join('\n')}`);
}

describe.each(modeRows())('the tools against real jobs (%s)', (mode, skip) => {
  it.skipIf(skip)('background of a command that keeps running answers after the settle window with the lines so far', async () => {
    const runtime = await startRuntime(mode, { settleMs: 300 });
    const tools = createTools(runtime, { approve: approver().approve });
    const command = 'echo ready; echo warming up >&2; exec sleep 60';
    const started = Date.now();
    const text = await tools.background.run({ command });
    const took = Date.now() - started;
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^job 0 running 0:0\d echo ready; echo warming up >&2; exec sleep 60 · 1 proc · [\d.]+ [KMG]B · cpu [\d.]+s$/);
    expect(lines.slice(1)).toEqual(['> ready', '! warming up', 'job_status {"id": 0} reads more; job_kill {"id": 0} stops it.']);
    // It waited the settle window (a job that keeps running never ends it early), and not for ever.
    expect(took).toBeGreaterThanOrEqual(300);
    expect(took).toBeLessThan(10_000);
    expect(isRunning(runtime.list()[0]!.pid!)).toBe(true);
  });

  it.skipIf(skip)('background of nonexistent-command answers exited 127 with the shell error marked "! "', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: approver().approve });
    const text = await tools.background.run({ command: 'nonexistent-command' });
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^job 0 exited 127 0:0\d nonexistent-command$/);
    expect(lines[1]).toMatch(/^! .*nonexistent-command: (command )?not found$/);
    expect(lines.at(-1)).toBe('job 0 has ended; its output stays readable with job_status {"id": 0}.');
  });

  it.skipIf(skip)('background of exit 3 answers exited 3', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: approver().approve });
    const text = await tools.background.run({ command: 'exit 3' });
    expect(text.split('\n')[0]).toMatch(/^job 0 exited 3 0:0\d exit 3$/);
  });

  it.skipIf(skip)('job_kill returns the final report, every process is gone, and the output stays readable', async () => {
    const runtime = await startRuntime(mode);
    const { approve } = approver();
    const tools = createTools(runtime, { approve });
    const oracle = new EofOracle();
    try {
      await tools.background.run({ command: `${oracle.prefix} exec ${FIXTURES}/forever.sh` });
      await waitForOutput(runtime, 0, 'ready');
      const final = await tools.job_kill.run({ id: 0 });
      expect(final.split('\n')).toEqual([
        expect.stringMatching(/^job 0 killed SIGTERM \d+:\d\d exec 9>.* exec .*forever\.sh$/),
        '> ready',
        'job 0 has ended; its output stays readable with job_status {"id": 0}.',
      ]);
      // Final means final: every process of the job (the fixture's child sleep too) is gone.
      expect(oracle.closed || (await oracle.eofWithin(5_000))).toBe(true);
      const after = await tools.job_status.run({ id: 0 });
      expect(after).toBe(final); // the elapsed time of a finished job is frozen at its end
      expect(await tools.job_status.run({})).toMatch(/^job 0 killed SIGTERM \d+:\d\d .*\n0 of 8 running$/);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('job_kill of a job that ignores SIGTERM: killed SIGKILL after the grace period', async () => {
    const runtime = await startRuntime(mode, { killGraceMs: 300 });
    const tools = createTools(runtime, { approve: approver().approve });
    const oracle = new EofOracle();
    try {
      await tools.background.run({ command: `${oracle.prefix} exec ${FIXTURES}/ignore-term.sh` });
      await waitForOutput(runtime, 0, 'ready');
      const final = await tools.job_kill.run({ id: 0 });
      expect(final.split('\n')).toEqual([
        expect.stringMatching(/^job 0 killed SIGKILL \d+:\d\d exec 9>.* exec .*ignore-term\.sh$/),
        '> ready',
        'job 0 has ended; its output stays readable with job_status {"id": 0}.',
      ]);
      expect(oracle.closed || (await oracle.eofWithin(5_000))).toBe(true);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('a job whose supervisor died reads as lost, and the next background starts a fresh supervisor', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: approver().approve });
    const oracle = new EofOracle();
    try {
      await tools.background.run({ command: `${oracle.prefix} exec ${FIXTURES}/forever.sh` });
      await waitForOutput(runtime, 0, 'ready');
      const first = supervisorInstance(runtime);
      killSupervisor(runtime, 'SIGKILL');
      await waitFor(runtime, () => runtime.list()[0]?.state === 'lost', 10_000);
      await settledLostCleanups(runtime);
      await oracle.waitEof(); // what was left of the job is gone
      const lost = (await tools.job_status.run({ id: 0 })).split('\n');
      expect(lost).toEqual([
        expect.stringMatching(/^job 0 lost \d+:\d\d exec 9>.*forever\.sh$/),
        expect.stringMatching(/^job 0 is lost: its supervisor died \(.*\). Its output is gone; call background again if the job is still needed\.$/),
      ]);
      expect(await tools.job_status.run({})).toMatch(/^job 0 lost .*\n0 of 8 running$/);
      expect(await tools.background.run({ command: 'echo again; exec sleep 60' })).toMatch(/^job 1 running .*\n> again\n/);
      // By instance: the new supervisor may have the dead one's pid (a fresh-clone CI run met that).
      expect(supervisorInstance(runtime)).not.toBe(first);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('refuses the ninth job while eight run, naming them and spawning nothing; accepts it after one is killed', async () => {
    const runtime = await startRuntime(mode);
    const { approve, asked } = approver();
    const tools = createTools(runtime, { approve });
    const oracle = new EofOracle();
    try {
      for (let i = 0; i < 8; i++) {
        expect(await tools.background.run({ command: `${oracle.prefix} exec sleep 60 # ${i}` })).toMatch(new RegExp(`^job ${i} running `));
      }
      const supervisor = supervisorPid(runtime)!;
      const children = childrenOf(supervisor).sort();
      expect(children).toHaveLength(8);
      const questions = asked.length;

      const refused = await tools.background.run({ command: 'echo ninth' });
      expect(refused).toMatch(/^background is refused: 8 of 8 jobs are running, the most allowed at once: /);
      for (let i = 0; i < 8; i++) expect(refused).toContain(`job ${i} (${oracle.prefix} exec sleep 60 # ${i})`);
      expect(refused).toMatch(/Stop one with job_kill, or wait for one to end, then try again\. Nothing was started\.$/);
      // Nothing spawned: no job number taken, no new process, and the user was not even asked.
      expect(runtime.list()).toHaveLength(8);
      expect(childrenOf(supervisor).sort()).toEqual(children);
      expect(asked).toHaveLength(questions);
      // The runtime refuses too (a host calling it directly), also without spawning.
      await expect(runtime.background({ command: 'echo ninth' })).rejects.toMatchObject({ code: 'ERR_JOB_LIMIT' });
      expect(runtime.list()).toHaveLength(8);
      expect(await tools.job_status.run({})).toMatch(/\n8 of 8 running$/);

      expect(await tools.job_kill.run({ id: 3 })).toMatch(/^job 3 killed SIGTERM /);
      const accepted = await tools.background.run({ command: 'echo ninth; exec sleep 60' });
      expect(accepted.split('\n').slice(0, 2)).toEqual([expect.stringMatching(/^job 8 running 0:0\d echo ninth; exec sleep 60 · 1 proc · [\d.]+ [KMG]B · cpu [\d.]+s$/), '> ninth']);
      expect(await tools.job_status.run({})).toMatch(/\n8 of 8 running$/);
    } finally {
      await runtime.close();
      await oracle.waitEof();
      oracle.dispose();
    }
  });

  it.skipIf(skip)('close() ends every job and everything the jobs started', async () => {
    const runtime = await startRuntime(mode);
    const tools = createTools(runtime, { approve: approver().approve });
    const oracle = new EofOracle();
    try {
      await tools.background.run({ command: `${oracle.prefix} exec ${FIXTURES}/forever.sh` });
      await tools.background.run({ command: `${oracle.prefix} sleep 60 & sleep 60 & echo started; wait` });
      await tools.background.run({ command: `${oracle.prefix} (setsid sleep 60 &); echo detached; exec sleep 60` });
      await waitForOutput(runtime, 0, 'ready');
      await waitForOutput(runtime, 1, 'started');
      await waitForOutput(runtime, 2, 'detached');
      expect(oracle.closed).toBe(false);
      await runtime.close();
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)("runs in the call's cwd with its env (what a shell command gets), defaults from createTools", async () => {
    const runtime = await startRuntime(mode);
    const worktree = tempDir();
    const other = tempDir();
    const tools = createTools(runtime, {
      approve: approver().approve,
      defaults: { cwd: worktree, env: { ...process.env, HEPH_TEST_VALUE: 'from-defaults' } },
    });
    const fromDefaults = await tools.background.run({ command: 'pwd; echo "value=$HEPH_TEST_VALUE"' });
    expect(fromDefaults.split('\n').slice(1, 3)).toEqual([`> ${fs.realpathSync(worktree)}`, '> value=from-defaults']);
    const fromCall = await tools.background.run(
      { command: 'pwd; echo "value=$HEPH_TEST_VALUE"' },
      { cwd: other, env: { PATH: process.env.PATH, HEPH_TEST_VALUE: 'from-call' } },
    );
    expect(fromCall.split('\n').slice(1, 3)).toEqual([`> ${fs.realpathSync(other)}`, '> value=from-call']);
    const missing = await tools.background.run({ command: 'pwd' }, { cwd: path.join(other, 'missing') });
    expect(missing.split('\n')).toEqual([
      expect.stringMatching(/^job 2 failed 0:00 pwd$/),
      `job 2 could not start: the working directory ${path.join(other, 'missing')} does not exist. Fix the command or its working directory, then call background again.`,
    ]);
  });

  it.skipIf(skip)('/job-kill stops a job with no approver and no rules, and returns its final report', async () => {
    const runtime = await startRuntime(mode);
    const starter = createTools(runtime, { approve: approver().approve });
    const oracle = new EofOracle();
    try {
      await starter.background.run({ command: `${oracle.prefix} exec ${FIXTURES}/forever.sh` });
      await waitForOutput(runtime, 0, 'ready');
      // No approver, and a rule that /job-kill must ignore.
      const user = createTools(runtime, { rules: { job_kill: ['worktree:{ref}'] }, defaults: { ref: 'main' } });
      expect(await user.job_kill.run({ id: 0 })).toMatch(/^job_kill is refused: job_kill\(.*forever\.sh\) needs the user's approval/);
      const final = await user.userKill('0');
      expect(final).toMatch(/^job 0 killed SIGTERM \d+:\d\d .*\n> ready\njob 0 has ended; its output stays readable with job_status \{"id": 0\}\.$/);
      expect(oracle.closed || (await oracle.eofWithin(5_000))).toBe(true);
      expect(await user.userKill(7)).toBe('/job-kill: there is no job 7. The jobs are 0. job_status {} lists every job.');
      expect(await user.userKill('seven')).toMatch(/^\/job-kill: "seven" is not a job number; use \/job-kill followed by the number/);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('lock rules: background holds its rules and locks; job_status and job_kill fail at once on overlap; /job-kill still works', async () => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const { approve, asked } = approver();
    const rules = { background: ['worktree:{ref}'], job_status: ['worktree:{ref}'], job_kill: ['worktree:{ref}'] };
    const tools = createTools(runtime, { approve, rules, defaults: { ref: 'main' } });
    const oracle = new EofOracle();
    try {
      const started = await tools.background.run({ command: `${oracle.prefix} exec ${FIXTURES}/forever.sh`, locks: ['port:5173'] });
      expect(started).toMatch(/^job 0 running /);
      expect(toolPort(runtime).held(0).map((res) => res.resource)).toEqual(['port:5173', 'worktree:main']);
      const questions = asked.length;

      const status = await tools.job_status.run({ id: 0 });
      expect(status).toBe(
        `job_status cannot run: its lock rules need worktree:main, and job 0 (${oracle.prefix} exec ${FIXTURES}/forever.sh) ` +
          'holds worktree:main until it has ended, so this call would wait on its own target. Nothing was read. ' +
          'Ask the user to run /job-kill 0, which stops the job without waiting for any lock.',
      );
      expect(await tools.job_status.run({})).toMatch(/^job_status cannot run: .*\/job-kill 0/);
      const kill = await tools.job_kill.run({ id: 0 });
      expect(kill).toMatch(/^job_kill cannot run: its lock rules need worktree:main, .* Nothing was stopped\. Ask the user to run \/job-kill 0,/);
      expect(asked).toHaveLength(questions); // failed at once: the user was not asked
      expect(oracle.closed).toBe(false);

      // Rules that do not overlap: the tool holds its own set for the call and lets it go after.
      const holding = runtime.locks.holding;
      const elsewhere = await tools.job_status.run({ id: 0 }, { ref: 'feature' });
      expect(elsewhere).toMatch(/^job 0 running .*\n> ready\n/);
      expect(runtime.locks.holding).toBe(holding);
      // A bad lock from the model is an answer, and nothing starts.
      expect(await tools.background.run({ command: 'true', locks: ['port'] }, { ref: 'other' })).toMatch(
        /^background: bad lock: bad lock resource "port": it has no ":" between kind and value; .* Nothing was started\.$/,
      );
      expect(runtime.list()).toHaveLength(1);

      expect(await tools.userKill(0)).toMatch(/^job 0 killed SIGTERM /);
      expect(oracle.closed || (await oracle.eofWithin(5_000))).toBe(true);
      await waitCleanedUp(runtime, 0);
      expect(toolPort(runtime).held(0)).toEqual([]);
      expect(await tools.job_status.run({ id: 0 })).toMatch(/^job 0 killed SIGTERM /);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('job_status and job_kill fail at once on a target still waiting for what their rules need (issue 12, item 6)', async () => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const { approve, asked } = approver();
    const rules = { background: ['worktree:{ref}'], job_status: ['worktree:{ref}'], job_kill: ['worktree:{ref}'] };
    const tools = createTools(runtime, { approve, rules, defaults: { ref: 'main' } });
    // The host's own action holds the worktree, so the job waits for it.
    const host = await runtime.locks.acquire({ label: 'publish', kind: 'host' }, normalizeResources(['worktree:main']));
    const starting = tools.background.call({ command: 'echo started; exec sleep 60' });
    try {
      expect(await waitFor(runtime, () => runtime.list()[0]?.state === 'waiting', 10_000)).toBe(true);
      const questions = asked.length;
      const waiting = 'job 0 (echo started; exec sleep 60) is waiting for worktree:main and will hold it until it has ended';
      const status = await within(tools.job_status.run({ id: 0 }), 5_000, 'job_status of a job waiting for its locks');
      expect(status).toBe(
        `job_status cannot run: its lock rules need worktree:main, and ${waiting}, so this call would wait on its own target. ` +
          'Nothing was read. Ask the user to run /job-kill 0, which stops the job without waiting for any lock.',
      );
      expect(await within(tools.job_status.run({}), 5_000, 'the list')).toMatch(/^job_status cannot run: .* is waiting for worktree:main .*\/job-kill 0/);
      expect(await within(tools.job_kill.run({ id: 0 }), 5_000, 'job_kill of a job waiting for its locks')).toMatch(
        /^job_kill cannot run: its lock rules need worktree:main, and job 0 .* is waiting for worktree:main .* Nothing was stopped\./,
      );
      expect(asked).toHaveLength(questions); // failed at once: the user was not asked
      expect(runtime.locks.holding).toBe(1); // the host's lease alone: nothing was taken or queued
      // Elsewhere (another ref) the rules do not overlap, and the job is read while it waits.
      expect(await tools.job_status.run({ id: 0 }, { ref: 'feature' })).toMatch(/^job 0 waiting /);
      // The user's /job-kill needs no lock: it ends the wait, and the job never starts.
      expect(await within(tools.userKill(0), 5_000, '/job-kill of the waiting job')).toMatch(/^job 0 cancelled /);
      expect((await starting).text).toMatch(/^job 0 cancelled /);
    } finally {
      host.release();
      await starting;
    }
  });
});

describe('permissions (exact patterns, levels, approvers)', () => {
  /** A fake `npm` first on PATH, so `npm run dev` is a harmless job that keeps running. */
  function fakeNpm(): { cwd: string; env: NodeJS.ProcessEnv } {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'bin', 'npm'), '#!/bin/sh\necho "fake npm $*"\nexec sleep 60\n', { mode: 0o755 });
    return { cwd: dir, env: { ...process.env, PATH: `${path.join(dir, 'bin')}:${process.env.PATH}` } };
  }

  it('"always" for npm run dev approves exactly that command, not "npm run dev " or "npm run dev; rm -rf x"', async () => {
    const runtime = await startRuntime('process-group');
    const { approve, patterns } = approver({ 'background(npm run dev)': 'always' }, 'deny');
    const tools = createTools(runtime, { approve, defaults: fakeNpm() });
    const victim = path.join(tempDir(), 'x');
    fs.mkdirSync(victim);

    expect(tools.background.pattern({ command: 'npm run dev' })).toBe('background(npm run dev)');
    expect(tools.background.pattern({ command: 'npm run dev ' })).toBe('background(npm run dev )');
    expect(tools.background.pattern({ command: 7 })).toBeNull();

    expect(await tools.background.run({ command: 'npm run dev' })).toMatch(/^job 0 running .*\n> fake npm run dev\n/);
    expect(await tools.background.run({ command: 'npm run dev' })).toMatch(/^job 1 running /);
    expect(patterns()).toEqual(['background(npm run dev)']); // asked once, remembered

    expect(await tools.background.run({ command: 'npm run dev ' })).toBe(
      'The user denied background(npm run dev ); nothing was started. Do not repeat this call; ask the user what to do instead.',
    );
    expect(await tools.background.run({ command: `npm run dev; rm -rf ${victim}` })).toMatch(/^The user denied background\(npm run dev; rm -rf .*\); nothing was started\./);
    expect(patterns()).toEqual(['background(npm run dev)', 'background(npm run dev )', `background(npm run dev; rm -rf ${victim})`]);
    expect(runtime.list()).toHaveLength(2);
    expect(fs.existsSync(victim)).toBe(true);

    // job_kill's pattern is the exact command of its target.
    expect(tools.job_kill.pattern({ id: 1 })).toBe('job_kill(npm run dev)');
    expect(tools.job_kill.pattern({ id: 99 })).toBeNull();
    expect(await tools.job_kill.run({ id: 1 })).toMatch(/^The user denied job_kill\(npm run dev\); nothing was stopped\./);
    expect(runtime.list()[1]!.state).toBe('running');
  });

  it('"always" for job_input approves that text to that command, and no other text (issue 12, item 5)', async () => {
    const runtime = await startRuntime('process-group');
    const dir = tempDir();
    const victim = path.join(dir, 'pwned');
    // The person answers the first question "always", and would deny anything after it.
    const asked: string[] = [];
    const approve = async ({ pattern }: ApprovalRequest): Promise<ApprovalAnswer> => (asked.push(pattern) === 1 ? 'always' : 'deny');
    const tools = createTools(runtime, { approve, defaults: { cwd: dir } });
    const yes = createTools(runtime, { approve: async () => 'once' });
    expect(await yes.background.run({ command: 'sh -i', stdin: true })).toMatch(/^job 0 running /);

    expect((await tools.job_input.call({ id: 0, text: 'echo first\n' })).isError).toBe(false);
    await waitForOutput(runtime, 0, 'first');
    const other = await tools.job_input.call({ id: 0, text: `echo pwned > ${victim}\n` });
    // The remembered text runs unasked; sh reads its stdin in order, so once it has answered this,
    // it would have run the other text before, had that been written.
    expect((await tools.job_input.call({ id: 0, text: 'echo first\n' })).isError).toBe(false);
    await waitForLines(runtime, 0, (lines) => lines.filter((line) => line.endsWith('first')).length >= 2, 'the second "first"');
    expect(fs.existsSync(victim)).toBe(false);
    expect(other).toMatchObject({ isError: true, text: expect.stringMatching(/^The user denied job_input\(sh -i <- "echo pwned > .*\\n"\); nothing was/) });
    expect(asked).toEqual(['job_input(sh -i <- "echo first\\n")', `job_input(sh -i <- ${JSON.stringify(`echo pwned > ${victim}\n`)})`]);

    // The pattern shows the text as JSON, and closing stdin as EOF.
    expect(tools.job_input.pattern({ id: 0, text: 'ls\n', close: true })).toBe('job_input(sh -i <- "ls\\n" + EOF)');
    expect(tools.job_input.pattern({ id: 0, close: true })).toBe('job_input(sh -i <- EOF)');
    expect(tools.job_input.pattern({ id: 7, text: 'ls\n' })).toBeNull();
  });

  it('job_status never asks, even with no approver; level 2 asks; "once" is not remembered', async () => {
    const runtime = await startRuntime('process-group');
    const { approve, patterns } = approver({}, 'once');
    const tools = createTools(runtime, { approve });
    expect(tools.all.map((tool) => [tool.name, tool.level])).toEqual([
      ['background', 2],
      ['job_status', 0],
      ['job_kill', 2],
      ['job_input', 2],
      ['job_restart', 2],
    ]);
    await tools.background.run({ command: 'echo once; exec sleep 60' });
    await tools.background.run({ command: 'echo once; exec sleep 60' });
    expect(patterns()).toEqual(['background(echo once; exec sleep 60)', 'background(echo once; exec sleep 60)']);
    await tools.job_status.run({ id: 0 });
    await tools.job_status.run({});
    await tools.job_status.run({ id: 1, lines: 5 });
    expect(tools.job_status.pattern({ id: 0 })).toBeNull();
    expect(patterns()).toHaveLength(2);
    const reader = createTools(runtime); // no approver at all
    expect(await reader.job_status.run({ id: 0 })).toMatch(/^job 0 running .*\n> once\n/);
    // A finished, cleaned-up job has nothing left to stop: job_kill answers without asking.
    await tools.job_kill.run({ id: 0 });
    expect(patterns().at(-1)).toBe('job_kill(echo once; exec sleep 60)');
    await waitCleanedUp(runtime, 0);
    const asked = patterns().length;
    expect(await tools.job_kill.run({ id: 0 })).toMatch(/^job 0 killed SIGTERM /);
    expect(patterns()).toHaveLength(asked);
  });

  it('with no approver, level-2 tools are refused with a clear message and nothing is spawned', async () => {
    const runtime = await startRuntime('process-group');
    const tools = createTools(runtime);
    expect(await tools.background.run({ command: 'touch should-not-exist' })).toBe(
      "background is refused: background(touch should-not-exist) needs the user's approval, and this host has no approver " +
        'configured, so nothing was started. (Host: pass an approve function, createTools(runtime, { approve }), to ask the user.)',
    );
    expect(runtime.list()).toEqual([]);
    expect(supervisorPid(runtime)).toBeNull(); // not even a supervisor was started
  });

  it('a denial, a broken approver and a bad answer spawn nothing', async () => {
    const runtime = await startRuntime('process-group');
    const denied = createTools(runtime, { approve: async () => 'deny' });
    expect(await denied.background.run({ command: 'echo hi' })).toBe(
      'The user denied background(echo hi); nothing was started. Do not repeat this call; ask the user what to do instead.',
    );
    const broken = createTools(runtime, {
      approve: async () => {
        throw new Error('terminal closed');
      },
    });
    expect(await broken.background.run({ command: 'echo hi' })).toBe(
      'background is refused: asking the user to approve background(echo hi) failed (terminal closed), so nothing was started.',
    );
    const odd = createTools(runtime, { approve: async () => 'yes' as ApprovalAnswer });
    expect(await odd.background.run({ command: 'echo hi' })).toMatch(/^background is refused: the approver answered "yes" for background\(echo hi\), which is not "once", "always" or "deny"; it counts as a denial/);
    expect(runtime.list()).toEqual([]);
    expect(supervisorPid(runtime)).toBeNull();
  });
});
