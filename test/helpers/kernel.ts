/**
 * Kernel-truth oracles for tests: /proc, cgroup files, and a FIFO whose write end every job
 * process inherits (it reaches EOF only when the last of them is gone). Never kill(pid, 0): it
 * succeeds on zombies.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { listProcesses, readProcStat, environContains, processStartTime } from '../../supervisor/platform/procfs.js';

/** Start time of a process, to tell a recycled pid apart. */
export const startTime = processStartTime;

/** A process we saw, identified by pid and start time. */
export interface SeenProcess {
  pid: number;
  start: string;
}

export function see(pid: number): SeenProcess {
  const start = startTime(pid);
  if (start === null) throw new Error(`process ${pid} does not exist`);
  return { pid, start };
}

/** Gone entirely: no /proc entry (a zombie still has one), or the pid now names another process. */
export function isReaped(process: SeenProcess): boolean {
  const start = startTime(process.pid);
  return start === null || start !== process.start;
}

/** Alive and not a zombie. */
export function isRunning(pid: number): boolean {
  const state = readProcStat(pid)?.state;
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/** Processes (zombies included) whose environment holds `KEY=value`. Zombies' environ is empty,
 * so they are found through `alsoPids` (pids recorded while they lived). */
export function processesWithEnv(entry: string): number[] {
  return listProcesses()
    .filter((proc) => proc.pid !== process.pid && environContains(proc.pid, entry))
    .map((proc) => proc.pid);
}

/** Zombie children of `parent`. */
export function zombieChildren(parent: number): number[] {
  return listProcesses()
    .filter((proc) => proc.ppid === parent && proc.state === 'Z')
    .map((proc) => proc.pid);
}

/**
 * Polls `check` until it returns true; the deadline only turns a hang into a failure, and the
 * message shows what was last seen. Used only on kernel state that has no event to wait for.
 */
export async function waitUntil(check: () => boolean, what: string, timeoutMs = 10_000, seen: () => unknown = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${JSON.stringify(seen())}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
}

/**
 * A FIFO every job process inherits as fd 9 (`exec 9>FIFO` at the start of the command). Its
 * reader sees EOF only when every process holding the write end has exited.
 */
export class EofOracle {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-fifo-'));
  readonly fifo = path.join(this.dir, 'all-gone');
  private eof: Promise<void>;
  private reached = false;

  constructor() {
    execFileSync('mkfifo', [this.fifo]);
    // The open blocks (in libuv's thread pool) until the job opens the write end.
    const stream = fs.createReadStream(this.fifo);
    stream.on('data', () => {});
    this.eof = new Promise((resolve, reject) => {
      stream.on('end', () => {
        this.reached = true;
        resolve();
      });
      stream.on('error', reject);
    });
  }

  /** Shell prefix that hands the write end to the job and all it starts. */
  get prefix(): string {
    return `exec 9>${this.fifo}; `;
  }

  get closed(): boolean {
    return this.reached;
  }

  /** Resolves on EOF; rejects after `ms`. */
  async waitEof(ms = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the job's processes still hold ${this.fifo} after ${ms} ms`)), ms);
    });
    try {
      await Promise.race([this.eof, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** True if EOF arrives within `ms` (for negative controls, which expect false). */
  async eofWithin(ms: number): Promise<boolean> {
    return this.waitEof(ms).then(
      () => true,
      () => false,
    );
  }

  dispose(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A file the job writes when it has reached a point (a marker), awaited without sleeping blindly. */
export async function waitForFile(file: string, timeoutMs = 10_000): Promise<string> {
  await waitUntil(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8').endsWith('\n'), `file ${file}`, timeoutMs);
  return fs.readFileSync(file, 'utf8');
}
