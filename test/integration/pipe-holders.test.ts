/**
 * Issue 28 items 1 and 3: a process that merely holds a job's pipe (or terminal) is not the job's.
 * Anyone of the same user can open `/proc/<leader>/fd/1`, and real programs hold other processes'
 * stdio (tmux control mode hands the client's to the server), so neither job_kill nor the cleanup
 * after a supervisor crash may kill by it: a bystander outside heph-jobs, another runtime's job, and
 * another job's escaper live on, while every process carrying the killed (or lost) job's marker or
 * in its cgroup is gone (the negative control: a FIFO every real process of the job holds).
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JobRuntime } from '../../src/index.js';
import { readProcStat } from '../../supervisor/platform/procfs.js';
import { EofOracle, isReaped, isRunning, see, waitForFile, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { signalIfSame } from '../helpers/signal.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { killSupervisor, settledLostCleanups, supervisorHello, waitFor } from '../../src/testing.js';
import { BOUNDED } from '../helpers/bounded.js';

/** tmux's stdout, or null when it fails (no server behind the socket). */
function tmuxText(socket: string, ...args: string[]): string | null {
  try {
    return execFileSync('tmux', ['-S', socket, ...args], { ...BOUNDED, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

/** Alive (not a zombie) and still the process we saw. */
function lives(proc: SeenProcess): boolean {
  return isRunning(proc.pid) && !isReaped(proc);
}

/** The pipe (or terminal) a process's descriptor `fd` is open on, as /proc links it. */
function target(pid: number, fd: number): string {
  return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
}

/** Whether one of `pid`'s descriptors is open on `file` (`pipe:[N]`, `/dev/pts/N`). */
function holds(pid: number, file: string): boolean {
  return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
    try {
      return target(pid, Number(fd)) === file;
    } catch {
      return false;
    }
  });
}

/** A shell line that starts an escaper: `setsid -f`, so it leaves the session and is adopted by the supervisor; it writes its pid to `pidFile`. */
function escaperLine(pidFile: string, body = ''): string {
  return `setsid -f /bin/sh -c '${body}echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 1000'`;
}

/**
 * Job A: its leader and an escaper of its own (another session, A's marker kept, adopted by the
 * supervisor), both holding the oracle's FIFO.
 */
async function startVictim(runtime: JobRuntime, oracle: EofOracle, tty = false): Promise<{ id: number; leader: SeenProcess; escaper: SeenProcess }> {
  const pidFile = path.join(tempDir(), 'own-escaper');
  const job = await runtime.background({ command: `${oracle.prefix}${escaperLine(pidFile)}; exec sleep 1000`, tty });
  const escaper = see(Number(await waitForFile(pidFile)));
  const supervisor = supervisorHello(runtime)!.pid;
  await waitUntil(() => readProcStat(escaper.pid)?.ppid === supervisor, 'the own escaper adopted by the supervisor');
  return { id: job.id, leader: see(job.pid!), escaper };
}

async function crashSupervisor(runtime: JobRuntime, id: number): Promise<void> {
  killSupervisor(runtime, 'SIGKILL');
  expect(await waitFor(runtime, () => runtime.list().find((entry) => entry.id === id)?.state === 'lost', 10_000)).toBe(true);
  await settledLostCleanups(runtime);
}

/** Stops what a test started outside heph-jobs, child first, and waits until each is reaped. */
async function stopAll(procs: SeenProcess[]): Promise<void> {
  for (const proc of procs) signalIfSame(proc, 'SIGKILL');
  for (const proc of procs) await waitUntil(() => isReaped(proc), `process ${proc.pid} reaped`);
}

describe.each(modeRows())('a process holding a job’s pipe is not the job’s (%s)', (mode, skip) => {
  it.skipIf(skip)('a bystander outside heph-jobs holding a lost job’s pipe, and its child, survive the cleanup after a crash', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    const dir = tempDir();
    let started: SeenProcess[] = [];
    try {
      const victim = await startVictim(runtime, oracle);
      const script = `exec 7>/proc/${victim.leader.pid}/fd/1; sleep 1000 & echo $! > ${dir}/child.tmp; mv ${dir}/child.tmp ${dir}/child; wait`;
      const bystanderProcess = spawn('/bin/sh', ['-c', script], { stdio: 'ignore' });
      const bystander = see(bystanderProcess.pid!);
      const child = see(Number(await waitForFile(path.join(dir, 'child'))));
      started = [child, bystander];
      expect(holds(bystander.pid, target(victim.leader.pid, 1))).toBe(true);
      expect(await oracle.eofWithin(100)).toBe(false);

      await crashSupervisor(runtime, victim.id);
      // The lost job's own processes (its marker, its group, its cgroup) are gone...
      // (Their parent, the crashed supervisor, is gone: init reaps them, a moment after the EOF.)
      await oracle.waitEof(10_000);
      await waitUntil(() => isReaped(victim.leader) && isReaped(victim.escaper), "the lost job's processes reaped");
      // ...and the bystander that only held its pipe, and its child, were left alone.
      expect(lives(bystander)).toBe(true);
      expect(lives(child)).toBe(true);
      const limitations = (await runtime.capabilities()).limitations.join('\n');
      expect(limitations).toContain("A process is never taken for a job's because it holds one of the job's pipes or its terminal");
    } finally {
      await stopAll(started);
      oracle.dispose();
    }
  });

  it.skipIf(skip)('another runtime’s job holding a lost job’s pipe runs on and is not reported killed', async () => {
    const lostSide = await startRuntime(mode);
    const otherSide = await startRuntime(mode);
    const oracle = new EofOracle();
    try {
      const victim = await startVictim(lostSide, oracle);
      const holder = await otherSide.background({ command: `exec 7>/proc/${victim.leader.pid}/fd/1; echo holding; exec sleep 1000` });
      await waitForOutput(otherSide, holder.id, 'holding');
      const holderLeader = see(holder.pid!);
      expect(holds(holderLeader.pid, target(victim.leader.pid, 1))).toBe(true);

      await crashSupervisor(lostSide, victim.id);
      await oracle.waitEof(10_000);
      expect(lives(holderLeader)).toBe(true);
      const report = await otherSide.status(holder.id);
      expect([report.state, report.signal]).toEqual(['running', null]);
    } finally {
      oracle.dispose();
    }
  });

  for (const tty of [false, true]) {
    it.skipIf(skip)(`job_kill A leaves job B’s escaper that holds A’s ${tty ? 'terminal' : 'pipe'} alive`, async () => {
      const runtime = await startRuntime(mode);
      const oracle = new EofOracle();
      try {
        const victim = await startVictim(runtime, oracle, tty);
        const held = target(victim.leader.pid, 1);
        const pidFile = path.join(tempDir(), 'other-escaper');
        const other = await runtime.background({ command: `${escaperLine(pidFile, `exec 7>/proc/${victim.leader.pid}/fd/1; `)}; exec sleep 1000` });
        const escaper = see(Number(await waitForFile(pidFile)));
        // B's orphan, adopted by the supervisor as A's own escaper is, and holding what A's leader holds.
        await waitUntil(() => readProcStat(escaper.pid)?.ppid === supervisorHello(runtime)!.pid, 'B’s escaper adopted by the supervisor');
        expect(holds(escaper.pid, held)).toBe(true);
        expect(await oracle.eofWithin(100)).toBe(false);

        const killed = await runtime.kill(victim.id);
        expect(killed.cleanedUp).toBe(true);
        await oracle.waitEof(10_000);
        expect(isReaped(victim.escaper)).toBe(true);
        expect(lives(escaper)).toBe(true);
        expect((await runtime.status(other.id)).state).toBe('running');
        // B's own kill still reaches its escaper (adopted, its marker B's).
        expect((await runtime.kill(other.id)).cleanedUp).toBe(true);
        await waitUntil(() => isReaped(escaper), 'B’s escaper reaped with B');
      } finally {
        oracle.dispose();
      }
    });
  }

  it.skipIf(skip)('job_kill of a `tmux -C attach` client leaves the tmux server of another job, and its panes, alive', async () => {
    const runtime = await startRuntime(mode);
    const dir = tempDir();
    const socket = path.join(dir, 'tmux');
    const tmux = `tmux -S ${socket} -f /dev/null`;
    const panes = () => {
      const result = tmuxText(socket, 'list-panes', '-a', '-F', '#{pane_pid}');
      return result === null ? null : result.trim().split('\n').length;
    };
    // Job B: a daemonised tmux server with two panes, the job's leader running on.
    const server = await runtime.background({
      command: `${tmux} new-session -d -s b 'exec sleep 1000' && ${tmux} split-window -t b 'exec sleep 1000' && echo started; exec sleep 1000`,
    });
    await waitForOutput(runtime, server.id, 'started');
    const serverPid = Number(tmuxText(socket, 'display-message', '-p', '#{pid}')!.trim());
    const serverProcess = see(serverPid);
    expect(panes()).toBe(2);
    // Job A: a control-mode client; the server holds the client's stdin and stdout.
    const client = await runtime.background({ command: `exec ${tmux} -C attach -t b`, stdin: true });
    await waitForOutput(runtime, client.id, '%session-changed');
    const clientLeader = see(client.pid!);
    expect(holds(serverPid, target(clientLeader.pid, 1))).toBe(true);

    const killed = await runtime.kill(client.id);
    expect(killed.cleanedUp).toBe(true);
    expect(isReaped(clientLeader)).toBe(true);
    expect(lives(serverProcess)).toBe(true);
    expect(panes()).toBe(2);
    expect((await runtime.status(server.id)).state).toBe('running');
    // The negative control of the pane count: B's own kill takes its server and panes.
    expect((await runtime.kill(server.id)).cleanedUp).toBe(true);
    expect(isReaped(serverProcess)).toBe(true);
    expect(panes()).toBe(null);
  });
});
