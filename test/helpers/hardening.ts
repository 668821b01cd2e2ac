/**
 * Helpers for the adversarial suite (test/hardening/): a FIFO oracle shared by many jobs, a marker
 * in the jobs' environment for /proc scans, the test process's own fd count, a seeded PRNG, a bare
 * supervisor on a socket the test controls, and the one-line summary each scenario prints.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { encodeFrame, FrameReader } from '../../src/protocol/codec.js';
import { supervisorEntry } from '../../src/runtime/supervisor-client.js';
import { environContains, listProcesses } from '../../supervisor/platform/procfs.js';
import { native } from '../../supervisor/native.js';
import type { JobRuntime } from '../../src/index.js';
import type { SupervisorConfig } from '../../src/protocol/messages.js';
import { processesWithEnv } from './kernel.js';
import { prng } from './random.js';
import { waitFor, toolPort } from '../../src/testing.js';
import { afterEach } from 'vitest';
export { prng };

/** `scenario N: iterations X, failures Y`: the line the closing note's table is built from. */
export function summary(scenario: number, iterations: number, failures: number, note = ''): void {
  console.log(`scenario ${scenario}: iterations ${iterations}, failures ${failures}${note ? ` (${note})` : ''}`);
}

/**
 * A unique `HEPH_TEST_MARK=<random>` entry for the jobs' environment: every process a job starts
 * inherits it (unless it clears its environment on purpose), so a /proc scan finds survivors.
 */
export class EnvMarker {
  readonly value = crypto.randomBytes(8).toString('hex');
  readonly entry = `HEPH_TEST_MARK=${this.value}`;

  env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    return { ...process.env, ...extra, HEPH_TEST_MARK: this.value };
  }

  /** Live (non-zombie) processes carrying the marker; a zombie's environ reads empty. */
  survivors(): number[] {
    return processesWithEnv(this.entry);
  }

  /** SIGKILLs every process still marked, through a pidfd opened before its marker is checked. */
  killSurvivors(): void {
    for (const pid of this.survivors()) {
      let pidfd: number;
      try {
        pidfd = native.pidfdOpen(pid);
      } catch {
        continue; // gone meanwhile
      }
      try {
        if (environContains(pid, this.entry)) native.pidfdSendSignal(pidfd, os.constants.signals.SIGKILL);
      } finally {
        native.closeFd(pidfd);
      }
    }
  }
}

/**
 * One FIFO for many jobs: each job's command starts with `exec 9>FIFO`, so every process of every
 * job holds the write end. The test holds a write end too, so the reader sees no EOF between jobs
 * (and a job's open never blocks: the reader is always there). `finish()` drops the test's end;
 * EOF then means every job process of every job is gone.
 */
export class SharedEofOracle {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-shared-fifo-'));
  readonly fifo = path.join(this.dir, 'all-gone');
  private readonly reader: net.Socket;
  private writer: number | null;
  private readonly eof: Promise<void>;
  private reached = false;

  constructor() {
    execFileSync('mkfifo', [this.fifo]);
    // Non-blocking open of the read end first, so the blocking open of our write end returns at once.
    const readFd = fs.openSync(this.fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    this.writer = fs.openSync(this.fifo, fs.constants.O_WRONLY);
    this.reader = new net.Socket({ fd: readFd, readable: true, writable: false });
    this.reader.on('data', () => {});
    this.eof = new Promise((resolve, reject) => {
      this.reader.once('end', () => {
        this.reached = true;
        resolve();
      });
      this.reader.once('error', reject);
    });
  }

  get prefix(): string {
    return `exec 9>${this.fifo}; `;
  }

  get closed(): boolean {
    return this.reached;
  }

  /** Drops the test's write end and waits (up to `ms`) for EOF. True on EOF. */
  async finish(ms: number): Promise<boolean> {
    if (this.writer !== null) {
      fs.closeSync(this.writer);
      this.writer = null;
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([this.eof.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  dispose(): void {
    if (this.writer !== null) fs.closeSync(this.writer);
    this.writer = null;
    this.reader.destroy();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The test process's own open descriptors (what a leak check counts). */
export function openFds(): string[] {
  return fs.readdirSync('/proc/self/fd');
}

/** What each of the test process's fds points at, for a leak message. */
export function describeFds(): string[] {
  return openFds().map((fd) => {
    try {
      return `${fd} -> ${fs.readlinkSync(`/proc/self/fd/${fd}`)}`;
    } catch {
      return `${fd} -> ?`;
    }
  });
}

/** Zombies whose parent is one of `parents`. */
export function zombiesOf(parents: Iterable<number>): number[] {
  const set = new Set(parents);
  return listProcesses()
    .filter((proc) => proc.state === 'Z' && set.has(proc.ppid))
    .map((proc) => proc.pid);
}


/** Resolves with `promise`, or rejects after `ms` with a message naming `what` and what was seen. */
export async function within<T>(promise: Promise<T>, ms: number, what: string, seen: () => unknown = () => ''): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}; last seen: ${JSON.stringify(seen())}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until `predicate` holds for job `id`'s output lines (all kept lines), re-reading on each change. */
export async function waitForLines(
  runtime: JobRuntime,
  id: number,
  predicate: (lines: string[]) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const report = await runtime.status(id, { lines: 1_000_000, maxBytes: toolPort(runtime).settings.maxReadBytes });
    const lines = report.output?.lines.map((line) => line.text) ?? [];
    if (predicate(lines)) return lines;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} in job ${id}; last report:\n${report.text.slice(-4000)}`);
    await waitFor(runtime, () => false, 20);
  }
}

/** The hello config of a bare supervisor: `mode`, `lockDir`, a short grace and drain, `output` over the defaults. */
export function bareConfig(mode: string, lockDir: string, output: Partial<SupervisorConfig['output']> = {}): SupervisorConfig {
  return {
    lockDir,
    containment: mode as SupervisorConfig['containment'],
    cgroupParent: null,
    killGraceMs: 500,
    drainMs: 500,
    output: { maxLines: 2000, maxLineBytes: 8192, maxBytes: 4 * 1024 * 1024, headLines: 20, ...output },
  };
}

/** A supervisor started by hand on a socket the test holds (no JobRuntime), as channel.test.ts
 * does; `env` adds to its environment (HEPH_JOBS_INJECT_FAULT). */
export function startBareSupervisor(env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [supervisorEntry()], {
    detached: true,
    stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
    env: { ...process.env, ...env, HEPH_JOBS_PARENT_PID: String(process.pid), MSGPACKR_NATIVE_ACCELERATION_DISABLED: 'true' },
  });
  const socket = child.stdio[3] as net.Socket;
  const reader = new FrameReader();
  const inbox: unknown[] = [];
  const waiters: (() => void)[] = [];
  socket.on('data', (chunk: Buffer) =>
    reader.push(chunk, (frame) => {
      inbox.push(frame.ok ? frame.value : frame);
      for (const waiter of waiters.splice(0)) waiter();
    }),
  );
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void closed.then(() => {
    for (const waiter of waiters.splice(0)) waiter();
  });
  let isClosed = false;
  void closed.then(() => (isClosed = true));
  /** The next message that `accept` takes (others stay in the inbox); fails after `ms`. */
  const next = async (accept: (message: unknown) => boolean = () => true, ms = 10_000): Promise<unknown> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const index = inbox.findIndex(accept);
      if (index >= 0) return inbox.splice(index, 1)[0];
      if (isClosed) throw new Error(`the supervisor closed the channel; inbox: ${JSON.stringify(inbox).slice(0, 2000)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message after ${ms} ms; inbox: ${JSON.stringify(inbox).slice(0, 2000)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  };
  let nextId = 1;
  /** Sends a request and resolves with its reply (ok or not). */
  const request = async (body: Record<string, unknown>, ms = 10_000): Promise<{ id: number; ok: boolean; value?: unknown; error?: unknown }> => {
    const id = 1_000_000 + nextId++;
    socket.write(encodeFrame({ ...body, id }));
    return (await next((message) => (message as { id?: unknown }).id === id, ms)) as { id: number; ok: boolean; value?: unknown; error?: unknown };
  };
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return { child, socket, inbox, next, request, exited };
}

export type BareSupervisor = ReturnType<typeof startBareSupervisor>;

/**
 * For a test file of bare supervisors: the returned function starts one (as startBareSupervisor),
 * and after each test every one it started has its channel closed and is waited for (a supervisor
 * whose channel ends stops its jobs and exits).
 */
export function bareSupervisorsClosedAfterEach(): (env?: NodeJS.ProcessEnv) => BareSupervisor {
  const started: BareSupervisor[] = [];
  afterEach(async () => {
    await Promise.all(
      started.splice(0).map(async (bare) => {
        bare.socket.end();
        await bare.exited;
      }),
    );
  });
  return (env = {}) => {
    const bare = startBareSupervisor(env);
    started.push(bare);
    return bare;
  };
}
