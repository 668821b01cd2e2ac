/**
 * The supervisor process's entry. Started by the runtime (src/supervisor-client.ts) with the
 * channel on fd 3, in its own session. It becomes a child subreaper, owns every job, and when the
 * runtime goes away (channel EOF, or the pidfd on its parent) it stops every job, reaps everything,
 * removes its cgroups and exits.
 */
import { native } from './native.js';
import { InvalidInputError, JobNotFoundError, ProtocolError } from '../src/protocol/errors.js';
import { requestProblem, type HelloReply, type Request, type SupervisorConfig } from '../src/protocol/messages.js';
import { SupervisedJob } from './job.js';
import { chooseContainment, type ContainmentStrategy } from './containment.js';
import { CHANNEL_FD, SupervisorChannel } from './channel.js';
import fs from 'node:fs';
import { constants as os } from 'node:os';
import { descendantsOf, listProcesses } from './platform/procfs.js';
import { KernelLocks } from './kernel-locks.js';
import { cleanupLostSupervisor } from './lost-cleanup.js';
import { waitOnOutput } from './output-wait.js';

process.title = 'heph-jobs supervisor';
closeInheritedDescriptors();
// A write to the runtime's stderr after it died must not crash us before cleanup.
process.stderr.on('error', () => {});

const jobs = new Map<number, SupervisedJob>();
let strategy: ContainmentStrategy | null = null;
let config: SupervisorConfig | null = null;
let locks: KernelLocks | null = null;
let shuttingDown: Promise<void> | null = null;

native.setChildSubreaper();
native.startReaper((child) => {
  if (child.token > 0) jobs.get(child.token - 1)?.leaderReaped(child.code, child.signal);
  // Any reap may be the last process (or zombie) some job was waiting for.
  for (const job of jobs.values()) if (job.exit && !job.cleanedUp) job.poke();
});

const channel = new SupervisorChannel(handle, () => void shutdown());

// The parent's death, seen through a pidfd: covers a runtime whose channel end leaked into some
// other process. If the parent died before we got here, we were reparented: shut down now.
const expectedParent = Number(process.env.HEPH_JOBS_PARENT_PID);
try {
  if (process.ppid !== expectedParent) throw new Error('parent already gone');
  native.watchPidfd(native.pidfdOpen(expectedParent), () => void shutdown());
} catch {
  void shutdown();
}

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => void shutdown());

/**
 * Closes descriptors the runtime's process leaked to us (opened without close-on-exec, which
 * libuv's spawn passes on): we must not keep a pipe its host waits on open. Everything Node and
 * libuv open is close-on-exec, and 0-2 and the channel (3) are ours, so only those are kept.
 */
function closeInheritedDescriptors(): void {
  const O_CLOEXEC = 0o2000000;
  for (const name of fs.readdirSync('/proc/self/fd')) {
    const fd = Number(name);
    if (fd <= CHANNEL_FD) continue;
    try {
      const info = fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1');
      const flags = Number.parseInt(/^flags:\s+([0-7]+)/m.exec(info)?.[1] ?? '0', 8);
      if ((flags & O_CLOEXEC) === 0) fs.closeSync(fd);
    } catch {
      // The directory's own fd, already closed: nothing to do.
    }
  }
}

async function handle(request: Request): Promise<unknown> {
  if (shuttingDown) throw new ProtocolError('the supervisor is shutting down');
  // Before hello there is nothing a malformed request could touch (and "hello must come first").
  if (config !== null || request.type === 'hello') {
    const problem = requestProblem(request);
    if (problem !== null) throw new ProtocolError(problem);
  }
  switch (request.type) {
    case 'hello':
      return hello(request.config);
    case 'ping':
      return { pid: process.pid };
    case 'spawn': {
      const job = SupervisedJob.start(request.params, requireStrategy(), requireConfig(), {
        onExited: (exited) =>
          channel.send({ event: 'exited', job: exited.id, code: exited.exit!.code, signal: exited.exit!.signal, at: exited.exit!.at }),
        onDone: (finished) => channel.send({ event: 'cleaned-up', job: finished.id, at: Date.now() }),
      });
      jobs.set(job.id, job);
      return job.reply;
    }
    case 'kill':
      return findJob(request.params.job).kill(request.params);
    case 'read': {
      const { job, wait, ...options } = request.params;
      const found = findJob(job);
      const waited = wait ? await waitOnOutput(found, wait, requireConfig().drainMs) : undefined;
      return { output: found.read(options), facts: found.facts(true), ...(waited ? { waited } : {}) };
    }
    case 'write':
      await findJob(request.job).write(request.data, request.close);
      return findJob(request.job).facts();
    case 'facts':
      return findJob(request.job).facts();
    case 'cleanup-lost':
      await cleanupLostSupervisor(request.supervisor.pid, request.supervisor.cgroupRoot, request.jobs);
      return null;
    case 'diagnostics':
      return { moduleLoadList: (process as unknown as { moduleLoadList?: string[] }).moduleLoadList ?? [] };
    case 'forget': {
      const job = findJob(request.job);
      if (!job.cleanedUp) throw new InvalidInputError(`job ${request.job} is still running; only finished jobs can be forgotten`);
      jobs.delete(request.job);
      return null;
    }
    case 'lock': {
      const job = request.owner.job === null ? null : jobs.get(request.owner.job);
      await requireLocks().acquire(request.lease, request.resources, {
        pid: process.pid,
        owner: request.owner.label,
        job: request.owner.job,
        cgroup: job?.identity.cgroup ?? strategy?.info.cgroupRoot ?? null,
      });
      return null;
    }
    case 'unlock':
      requireLocks().release(request.lease);
      return null;
    case 'shutdown':
      void shutdown();
      return null;
    default:
      throw new ProtocolError(`unknown request type ${JSON.stringify((request as { type: unknown }).type)}`);
  }
}

function hello(requested: SupervisorConfig): HelloReply {
  if (config) throw new ProtocolError('hello was already received');
  config = requested;
  strategy = chooseContainment(requested.containment, requested.cgroupParent);
  locks = new KernelLocks(requested.lockDir);
  return {
    pid: process.pid,
    containment: strategy.info,
    subreaper: native.isChildSubreaper(),
  };
}

function requireStrategy(): ContainmentStrategy {
  if (!strategy) throw new ProtocolError('hello must come first');
  return strategy;
}

function requireLocks(): KernelLocks {
  if (!locks) throw new ProtocolError('hello must come first');
  return locks;
}

function requireConfig(): SupervisorConfig {
  if (!config) throw new ProtocolError('hello must come first');
  return config;
}

function findJob(id: number): SupervisedJob {
  const job = jobs.get(id);
  if (!job) throw new JobNotFoundError(id, [...jobs.keys()]);
  return job;
}

/** Longest the final sweep waits for what it killed to be gone. */
const FINAL_SWEEP_MS = 5000;

/**
 * At the end of the session everything below the supervisor is ours, whatever job it came from:
 * a process that escaped attribution (left its session and cleared its environment) is still our
 * descendant, reparented to us as the subreaper. Kill them all, and let the reaper reap them.
 */
async function killEverythingBelowUs(): Promise<void> {
  const deadline = Date.now() + FINAL_SWEEP_MS;
  for (;;) {
    const table = listProcesses();
    const alive = new Set(table.filter((entry) => entry.state !== 'Z' && entry.state !== 'X').map((entry) => entry.pid));
    const left = [...descendantsOf([process.pid], table)].filter((pid) => pid !== process.pid && alive.has(pid));
    if (left.length === 0 || Date.now() > deadline) return;
    for (const pid of left) native.signalPid(pid, os.signals.SIGKILL);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Stops every job now (no grace: the runtime is gone or asked), removes our cgroups, exits. */
function shutdown(): Promise<void> {
  shuttingDown ??= (async () => {
    await Promise.all([...jobs.values()].map((job) => job.destroy()));
    await killEverythingBelowUs();
    strategy?.dispose();
    channel.close();
    process.exit(0);
  })();
  return shuttingDown;
}
