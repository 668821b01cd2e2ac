/**
 * The supervisor core against real processes, in both containment modes: exit statuses reported
 * once, orphans reaped, escapers stopped, hygiene of the job's process, exec failures.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EofOracle, isReaped, isRunning, see, waitUntil, zombieChildren, type SeenProcess } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { requestsSent, supervisorDiagnostics, supervisorHello, supervisorPid, waitFor, withTestSwitches } from '../../src/testing.js';

describe.each(modeRows())('supervisor core (%s)', (mode, skip) => {
  it.skipIf(skip)('reports an exit code exactly once', async () => {
    const runtime = await startRuntime(mode);
    const events: string[] = [];
    runtime.onJobEvent((event) => events.push(`${event.type}:${event.job}`));
    const report = await runtime.background({ command: 'exit 7' });
    await waitFor(runtime, () => events.includes(`cleaned-up:${report.id}`), 10_000);
    const final = await runtime.status(report.id);
    expect(final.state).toBe('exited');
    expect(final.exitCode).toBe(7);
    expect(final.signal).toBeNull();
    expect(events.filter((event) => event === `exited:${report.id}`)).toHaveLength(1);
  });

  it.skipIf(skip)('reports the signal of a killed job exactly once', async () => {
    const runtime = await startRuntime(mode);
    const events: string[] = [];
    runtime.onJobEvent((event) => events.push(`${event.type}:${event.job}`));
    const started = await runtime.background({ command: `exec ${FIXTURES}/forever.sh` });
    await waitForOutput(runtime, started.id, 'ready');
    const killed = await runtime.kill(started.id);
    expect(killed.state).toBe('killed');
    expect(killed.signal).toBe('SIGTERM');
    expect(killed.cleanedUp).toBe(true);
    expect(events.filter((event) => event === `exited:${started.id}`)).toHaveLength(1);
  });

  it.skipIf(skip)('returns the final report of a kill even when the job is forgotten as it finishes', async () => {
    // keepFinished 0: a finished job is forgotten at once, unless a call on it is still in flight.
    const runtime = await startRuntime(mode, { keepFinished: 0 });
    const job = await runtime.background({ command: 'echo up; exec sleep 1000' });
    await waitForOutput(runtime, job.id, 'up');
    const killed = await runtime.kill(job.id);
    expect(killed.state).toBe('killed');
    expect(killed.output?.lines.map((line) => line.text)).toEqual(['up']);
    // Once nothing is in flight on it, it is forgotten as the option says.
    expect(runtime.list().map((entry) => entry.id)).not.toContain(job.id);
  });

  it.skipIf(skip)('answers a kill with its final report in one round trip to the supervisor, its output read with the kill', async () => {
    const runtime = await startRuntime(mode);
    const job = await runtime.background({ command: 'echo up; sleep 0.05; echo more >&2; exec sleep 1000' });
    await waitForOutput(runtime, job.id, 'more');
    // The control: a status is one request.
    let before = requestsSent(runtime);
    await runtime.status(job.id);
    expect(requestsSent(runtime) - before).toBe(1);
    before = requestsSent(runtime);
    const killed = await runtime.kill(job.id, { signal: 'KILL' });
    expect(requestsSent(runtime) - before).toBe(1);
    expect(killed).toMatchObject({ state: 'killed', signal: 'SIGKILL', cleanedUp: true });
    expect(killed.output?.lines.map((line) => `${line.stream} ${line.text}`)).toEqual(['stdout up', 'stderr more']);
    // Killing it again finds it ended: the report is one read.
    before = requestsSent(runtime);
    const again = await runtime.kill(job.id);
    expect(requestsSent(runtime) - before).toBe(1);
    expect(again.output?.lines.map((line) => line.text)).toEqual(['up', 'more']);
  });

  it.skipIf(skip)('reaps 100 orphans a job leaves behind and removes its cgroup', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    try {
      const report = await runtime.background({ command: `${oracle.prefix} COUNT=100 ${FIXTURES}/many-sleeps.sh` });
      await oracle.waitEof();
      await waitFor(runtime, () => runtime.list().find((job) => job.id === report.id)?.cleanedUp === true, 10_000);
      const final = await runtime.status(report.id);
      expect(final.state).toBe('exited');
      expect(final.exitCode).toBe(0);
      expect(zombieChildren(supervisorPid(runtime)!)).toEqual([]);
      const cgroup = (await runtime.capabilities()).containment.cgroupRoot;
      if (mode === 'cgroup') {
        expect(cgroup).not.toBeNull();
        expect(fs.existsSync(path.join(cgroup!, `job-${report.id}`))).toBe(false);
      }
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('stops escapers (setsid + double fork, nohup, new process group) with their job', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    const pids = tempDir();
    try {
      const report = await runtime.background({
        command: `${oracle.prefix} exec ${FIXTURES}/escapers.sh`,
        env: { ...process.env, PIDS_DIR: pids },
      });
      await waitForOutput(runtime, report.id, 'ready');
      const escapers: SeenProcess[] = ['setsid', 'nohup', 'pgrp'].map((name) =>
        see(Number(fs.readFileSync(path.join(pids, name), 'utf8'))),
      );
      for (const escaper of escapers) expect(isRunning(escaper.pid)).toBe(true);
      await runtime.kill(report.id);
      await oracle.waitEof();
      await waitUntil(() => escapers.every(isReaped), 'every escaper reaped', 10_000, () => escapers);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('SIGKILLs a SIGTERM ignorer after the grace period', async () => {
    const runtime = await startRuntime(mode, { killGraceMs: 300 });
    const oracle = new EofOracle();
    try {
      const report = await runtime.background({ command: `${oracle.prefix} exec ${FIXTURES}/ignore-term.sh` });
      await waitForOutput(runtime, report.id, 'ready');
      const killed = await runtime.kill(report.id);
      expect(killed.state).toBe('killed');
      expect(killed.signal).toBe('SIGKILL');
      expect(oracle.closed || (await oracle.eofWithin(5000))).toBe(true);
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('sends SIGCONT after SIGTERM so a stopped job exits by its own handler', async () => {
    const runtime = await startRuntime(mode, { killGraceMs: 5000 });
    const report = await runtime.background({ command: `exec ${FIXTURES}/stop-self.sh` });
    await waitForOutput(runtime, report.id, 'ready');
    await waitUntil(() => fs.readFileSync(`/proc/${report.pid}/stat`, 'latin1').includes(') T '), 'the job to stop itself');
    const killed = await runtime.kill(report.id);
    expect(killed.state).toBe('exited');
    expect(killed.exitCode).toBe(0);
    expect(killed.output?.lines.map((line) => line.text)).toContain('got-term');
  });

  it.skipIf(skip)('gives a clear error for a missing cwd and leaves nothing behind', async () => {
    const runtime = await startRuntime(mode);
    const report = await runtime.background({ command: 'pwd', cwd: '/nonexistent/dir' });
    expect(report.state).toBe('failed');
    expect(report.reason).toContain('the working directory /nonexistent/dir does not exist');
    expect(report.text).toContain('job 0 failed');
    expect(zombieChildren(supervisorPid(runtime)!)).toEqual([]);
    const root = (await runtime.capabilities()).containment.cgroupRoot;
    if (root) expect(fs.readdirSync(root).filter((name) => name.startsWith('job-'))).toEqual([]);
  });

  it.skipIf(skip)('gives a clear error for a missing shell and leaves nothing behind', async () => {
    const runtime = await startRuntime(mode, { shell: '/nonexistent/sh' });
    const report = await runtime.background({ command: 'true' });
    expect(report.state).toBe('failed');
    expect(report.reason).toMatch(/cannot run the shell \/nonexistent\/sh \(ENOENT\)/);
    expect(zombieChildren(supervisorPid(runtime)!)).toEqual([]);
  });

  it.skipIf(skip)('starts a job with no blocked or ignored signals, fds 0-2 only, in its own session and cgroup', async () => {
    const runtime = await startRuntime(mode);
    const command = [
      // Builtins only: an external command could catch the shell mid-vfork, when dash briefly
      // blocks every signal.
      'while read -r key value; do case $key in SigBlk:|SigIgn:) echo "$key $value";; esac; done < /proc/$$/status',
      'ls /proc/$$/fd',
      'cut -d" " -f1,5,6 /proc/$$/stat',
      "grep '^0::' /proc/$$/cgroup",
    ].join('; ');
    const report = await runtime.background({ command });
    await waitFor(runtime, () => runtime.list()[0]?.cleanedUp === true, 10_000);
    const lines = (await runtime.status(report.id)).output!.lines.map((line) => line.text);
    expect(lines).toContain('SigBlk: 0000000000000000');
    expect(lines).toContain('SigIgn: 0000000000000000');
    expect(lines.filter((line) => /^\d+$/.test(line))).toEqual(['0', '1', '2']);
    expect(lines).toContain(`${report.pid} ${report.pid} ${report.pid}`);
    const cgroupLine = lines.find((line) => line.startsWith('0::'))!;
    // The subtree names the supervisor instance: its pid and its start time.
    const instance = supervisorHello(runtime)!.instance;
    expect(instance.pid).toBe(supervisorPid(runtime));
    if (mode === 'cgroup') expect(cgroupLine).toMatch(new RegExp(`/heph-jobs-${instance.pid}-${instance.start}-pidns\\d+/job-${report.id}$`));
    else expect(cgroupLine).not.toContain('heph-jobs');
  });

  it.skipIf(skip)('spawns through the fork fallback as well as clone3', async () => {
    const runtime = await startRuntime(mode, withTestSwitches({}, { forceFork: true }));
    const report = await runtime.background({ command: "grep '^0::' /proc/$$/cgroup; exit 4" });
    await waitFor(runtime, () => runtime.list()[0]?.cleanedUp === true, 10_000);
    const final = await runtime.status(report.id);
    expect(final.exitCode).toBe(4);
    const cgroupLine = final.output!.lines[0]!.text;
    if (mode === 'cgroup') expect(cgroupLine).toMatch(new RegExp(`/job-${report.id}$`));
  });
});

describe('the supervisor process', () => {
  it('never loads child_process (a reaper there would steal libuv exit statuses)', async () => {
    const runtime = await startRuntime('process-group');
    await runtime.background({ command: 'true' });
    const hello = await supervisorDiagnostics(runtime);
    expect(hello.moduleLoadList.length).toBeGreaterThan(10);
    expect(hello.moduleLoadList).toContain('NativeModule net');
    expect(hello.moduleLoadList.filter((name) => /child_process|process_wrap|spawn_sync/.test(name))).toEqual([]);
  });

  it('is a subreaper in its own session, titled heph-jobs supervisor', async () => {
    const runtime = await startRuntime('process-group');
    const caps = await runtime.capabilities();
    expect(caps.subreaper).toBe(true);
    const pid = caps.supervisorPid;
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    expect(Number(fields[3])).toBe(pid); // session id
    expect(Number(fields[2])).toBe(pid); // process group
    expect(fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1')).toContain('heph-jobs supervisor');
  });
});
