/**
 * Issue 8, scenarios 1, 2, 3, 7 and 8: the runtime killed at random moments while it starts its
 * supervisor and spawns; a runtime in a worker thread; descriptors that must not leak; jobs that
 * try to escape their cgroup; a supervisor SIGKILLed while another runtime waits on its lock.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { EofOracle, isReaped, isRunning, see, waitForFile, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { signalIfSame } from '../helpers/signal.js';
import { EnvMarker, prng, summary } from '../helpers/hardening.js';
import { cgroupUnavailable, modeRows, MODES } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';

const RACE_ITERATIONS = Number(process.env.HEPH_RACE_ITERATIONS ?? 200);

describe('scenario 1: the runtime SIGKILLed at random moments while starting', () => {
  it('never leaves a supervisor alone or any process of a job', { timeout: 300_000 }, async () => {
    const seed = Number(process.env.HEPH_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    let failures = 0;
    for (let i = 0; i < RACE_ITERATIONS; i++) {
      const mode = MODES[i % MODES.length]!;
      const marker = new EnvMarker();
      const host = spawn(process.execPath, [path.join(FIXTURES, 'runtime-host.mjs'), mode, 'exec sleep 1000', 'sleep 1000 & sleep 1000 & wait'], {
        stdio: 'ignore',
        env: marker.env(),
      });
      // Somewhere between node starting, the supervisor starting, and the jobs being spawned.
      const delay = Math.floor(random() * 400);
      await new Promise((resolve) => setTimeout(resolve, delay));
      host.kill('SIGKILL');
      await new Promise((resolve) => host.once('exit', resolve));
      try {
        // Everything with the marker (the supervisor inherits the host's environment, the jobs too).
        await waitUntil(() => marker.survivors().length === 0, `iteration ${i} (seed ${seed}, delay ${delay} ms) to leave nothing`, 15_000, () =>
          marker.survivors(),
        );
      } catch (error) {
        failures++;
        marker.killSurvivors();
        console.error(String(error));
      }
    }
    summary(1, RACE_ITERATIONS, failures, `seed ${seed}`);
    expect(failures).toBe(0);
  });
});

describe.each(modeRows())('scenario 2: a runtime in a worker thread (%s)', (mode, skip) => {
  it.skipIf(skip)('keeps its supervisor and job while the worker lives, and ends them when the worker ends', async () => {
    const oracle = new EofOracle();
    const worker = new Worker(path.join(FIXTURES, 'worker-runtime.mjs'), {
      workerData: { mode, command: `${oracle.prefix} exec sleep 1000` },
    });
    try {
      const { supervisorPid, jobPid } = await new Promise<{ supervisorPid: number; jobPid: number }>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      const supervisor = see(supervisorPid);
      // The thread that spawned the supervisor is idle now, but alive: nothing ends.
      expect(await oracle.eofWithin(300)).toBe(false);
      expect(isRunning(supervisorPid) && isRunning(jobPid)).toBe(true);
      await worker.terminate();
      // The worker's end of the channel closed: the supervisor stops the job and exits, while
      // this process (its parent) lives on. Parent-death detection does not hang on a thread.
      await oracle.waitEof(10_000);
      await waitUntil(() => isReaped(supervisor) || !isRunning(supervisor.pid), 'the supervisor to exit', 10_000);
      summary(2, 1, 0, mode);
    } finally {
      await worker.terminate();
      oracle.dispose();
    }
  });
});

describe('scenario 3: no leaked descriptors', () => {
  it('the supervisor closes descriptors the runtime process leaked to it', async () => {
    const file = path.join(tempDir(), 'leaked');
    fs.writeFileSync(file, 'x');
    // A host whose fd 40 is open without close-on-exec (as the spawn's dup2 leaves it): libuv
    // passes it on. (Node marks the low inherited ones, up to ~19, close-on-exec as it boots: a
    // leaked fd 7 would never reach the supervisor, and this test would pass without its cleanup.)
    const leaked = fs.openSync(file, 'r');
    const host = spawn(process.execPath, [path.join(FIXTURES, 'runtime-host.mjs'), 'process-group', 'exec sleep 1000'], {
      stdio: ['ignore', 'pipe', 'inherit', ...Array<'ignore'>(37).fill('ignore'), leaked],
    });
    fs.closeSync(leaked);
    try {
      const info = JSON.parse(await new Promise<string>((resolve) => readline.createInterface({ input: host.stdout! }).once('line', resolve)));
      const links = (pid: number) =>
        fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
          try {
            return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return '';
          }
        });
      // Negative control: the host itself has it, without close-on-exec, so its spawn passed it on.
      expect(links(host.pid!)).toContain(file);
      const flags = /^flags:\s+([0-7]+)$/m.exec(fs.readFileSync(`/proc/${host.pid}/fdinfo/40`, 'latin1'))![1]!;
      expect(Number.parseInt(flags, 8) & 0o2000000).toBe(0);
      expect(links(info.supervisorPid)).not.toContain(file);
      // And the job sees only 0-2 (it gets nothing of the supervisor: channel, pidfds, locks, inotify).
      expect(fs.readdirSync(`/proc/${info.jobs[0].pid}/fd`).sort()).toEqual(['0', '1', '2']);
      summary(3, 1, 0);
    } finally {
      host.kill('SIGKILL');
    }
  });

  it.each(MODES)('a job holding locks in %s mode sees only fds 0-2', async (mode) => {
    const runtime = await startRuntime(mode, { lockDir: path.join(tempDir(), 'locks') });
    const job = await runtime.background({ command: 'ls /proc/$$/fd; exec sleep 1000', locks: ['port:4000', 'path:/tmp/x'] });
    await waitForOutput(runtime, job.id, '2');
    const fds = (await runtime.status(job.id)).output!.lines.map((line) => line.text);
    expect(fds).toEqual(['0', '1', '2']);
  });
});

describe('scenario 7: escape attempts', () => {
  it.skipIf(cgroupUnavailable !== null)('a job that moves itself to another cgroup, or nests one, is still stopped', async () => {
    const runtime = await startRuntime('cgroup');
    const caps = await runtime.capabilities();
    expect(caps.limitations.join(' ')).toMatch(/can move its processes into another cgroup/);
    const parent = findOwnCgroupDir();
    if (!parent.ok) throw new Error(parent.reason);
    const pids = tempDir();
    const oracle = new EofOracle();
    try {
      // One child writes its pid into the cgroup the supervisor itself lives in (out of the job);
      // another makes a nested cgroup inside the job's and moves there.
      const command = [
        oracle.prefix,
        `sh -c 'echo $$ > ${parent.parent}/cgroup.procs && echo $$ > ${pids}/out.tmp && mv ${pids}/out.tmp ${pids}/out && exec sleep 1000' &`,
        `sh -c 'd=$(sed -n "s/^0:://p" /proc/self/cgroup); mkdir /sys/fs/cgroup/unified$d/nested && echo $$ > /sys/fs/cgroup/unified$d/nested/cgroup.procs && echo $$ > ${pids}/in.tmp && mv ${pids}/in.tmp ${pids}/in && exec sleep 1000' &`,
        'wait',
      ].join(' ');
      const job = await runtime.background({ command });
      const escaped = see(Number(await waitForFile(path.join(pids, 'out'))));
      const nested = see(Number(await waitForFile(path.join(pids, 'in'))));
      // The escape worked (root may do it): the process is outside the job's cgroup.
      expect(fs.readFileSync(`/proc/${escaped.pid}/cgroup`, 'utf8')).not.toContain(`job-${job.id}`);
      expect(fs.readFileSync(`/proc/${nested.pid}/cgroup`, 'utf8')).toContain(`job-${job.id}/nested`);
      await runtime.kill(job.id);
      await oracle.waitEof(10_000);
      await waitUntil(() => isReaped(escaped) && isReaped(nested), 'both escapers reaped');
      expect(fs.existsSync(path.join(caps.containment.cgroupRoot!, `job-${job.id}`))).toBe(false);
      summary(7, 1, 0);
    } finally {
      oracle.dispose();
    }
  });

  it('a process that left the session and cleared its environment is still stopped when the session ends', async () => {
    const runtime = await startRuntime('process-group');
    const pids = tempDir();
    const oracle = new EofOracle();
    try {
      await runtime.background({
        command: `${oracle.prefix} setsid sh -c 'exec env -i sh -c "echo \\$\\$ > ${pids}/ghost.tmp; mv ${pids}/ghost.tmp ${pids}/ghost; exec sleep 1000"' & wait`,
      });
      const ghost = see(Number(await waitForFile(path.join(pids, 'ghost'))));
      await runtime.close();
      await oracle.waitEof(10_000);
      await waitUntil(() => isReaped(ghost), 'the ghost reaped');
    } finally {
      oracle.dispose();
    }
  });
});

describe.each(modeRows())('scenario 8: supervisor SIGKILLed while another runtime waits on its lock (%s)', (mode, skip) => {
  it.skipIf(skip)('the waiter gets the resource only when no process of the old job is alive', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const dir = tempDir();
    // The first runtime in its own process, so that it can die with its supervisor and nobody
    // but the waiter is left to clean up.
    const first = spawn(
      process.execPath,
      [path.join(FIXTURES, 'runtime-host.mjs'), mode, `sleep 1000 & echo "$$ $!" > ${dir}/pids.tmp; mv ${dir}/pids.tmp ${dir}/pids; wait`],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, HEPH_TEST_LOCKS: 'port:6100', HEPH_TEST_LOCK_DIR: lockDir } },
    );
    let waiter: ReturnType<typeof spawn> | undefined;
    // The job's shell and its sleep, seen while they surely run: the cleanup below kills them
    // only while their pids still name them (by then they should be gone, and the pids free).
    let jobs: SeenProcess[] = [];
    try {
      const info = JSON.parse(await new Promise<string>((resolve) => readline.createInterface({ input: first.stdout! }).once('line', resolve)));
      const jobPids = (await waitForFile(path.join(dir, 'pids'))).trim().split(' ');
      jobs = jobPids.map((pid) => see(Number(pid)));
      waiter = spawn(process.execPath, [path.join(FIXTURES, 'lock-host.mjs'), lockDir, 'port:6100', ...jobPids], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const messages: { waiting?: boolean; acquired?: boolean; alive?: string[] }[] = [];
      readline.createInterface({ input: waiter.stdout! }).on('line', (line) => messages.push(JSON.parse(line)));
      await waitUntil(() => messages.some((message) => message.waiting), 'the second runtime to wait');
      process.kill(info.supervisorPid, 'SIGKILL');
      first.kill('SIGKILL');
      await waitUntil(() => messages.some((message) => message.acquired), 'the second runtime to acquire', 15_000);
      expect(messages.find((message) => message.acquired)?.alive).toEqual([]);
      summary(8, 1, 0, mode);
    } finally {
      first.kill('SIGKILL');
      waiter?.kill('SIGKILL');
      for (const job of jobs) signalIfSame(job, 'SIGKILL'); // false when gone, as it should be
    }
  });
});
