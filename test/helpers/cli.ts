/**
 * Driving the `heph-jobs` binary (dist/, as a user runs it): through pipes, or on a pseudo-terminal
 * (test/fixtures/pty-relay.py) for the interactive parts. Every wait is for output to appear, with a
 * deadline whose failure shows everything captured so far; every process started here is killed by
 * pid after the test and awaited.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { isReaped, see, waitUntil, type SeenProcess } from './kernel.js';
import { signalIfSame } from './signal.js';
import { Waiters } from './waiters.js';
import { FIXTURES } from './runtime.js';

export const CLI = path.resolve(import.meta.dirname, '../../dist/src/cli/main.js');
const RELAY = path.join(FIXTURES, 'pty-relay.py');

const running = new Set<CliProcess>();

afterEach(async () => {
  await Promise.all([...running].map((cli) => cli.kill()));
});

/** Terminal output as text: escape sequences removed, CRLF as LF. */
export function plain(text: string): string {
  return text
    .replace(/\x1b\[\?[0-9;]*[hl]/g, '')
    .replace(/\x1b\[[0-9;]*[A-Za-z]/g, '')
    .replace(/\r\n/g, '\n')
    .replace(/\r/g, '');
}

export interface CliOptions {
  /** On a pseudo-terminal of 120 x 40 (stdin and stdout are the terminal). Default: pipes. */
  pty?: boolean;
  /** Default: this process's, with XDG_STATE_HOME a temporary directory (the shell's history goes there, not to ~). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export class CliProcess {
  readonly child: ChildProcess;
  /** Everything written to stdout (on a pty: the terminal's output, escape sequences and all). */
  out = '';
  err = '';
  /** The heph-jobs process (on a pty, the relay's child). */
  pid: Promise<number>;
  /** The heph-jobs a pty relay started, as seen when the relay named it (null without a relay). */
  private readonly inner: Promise<SeenProcess | null>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Where the next `next()` starts looking in `plain(out)`. */
  private cursor = 0;
  /** The temporary XDG state directory made for this process, removed after it. */
  private readonly stateDir: string | null;
  private readonly waiters = new Waiters(() => this.transcript());

  constructor(args: readonly string[], options: CliOptions = {}) {
    const command = options.pty ? ['python3', RELAY, '120', '40', process.execPath, CLI, ...args] : [process.execPath, CLI, ...args];
    this.stateDir = options.env ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-state-'));
    const env = options.env ?? { ...process.env, XDG_STATE_HOME: this.stateDir! };
    this.child = spawn(command[0]!, command.slice(1), { cwd: options.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.out += chunk;
      this.changed();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.err += chunk;
      this.changed();
    });
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => {
      running.delete(this);
      if (this.stateDir) fs.rmSync(this.stateDir, { recursive: true, force: true });
      this.changed();
    });
    running.add(this);
    const childPid = this.child.pid!;
    this.pid = options.pty
      ? this.until(() => /^pid (\d+)$/m.exec(this.err), 'the relay to name its child').then((match) => Number(match[1]))
      : Promise.resolve(childPid);
    // Seen as soon as the relay names it, while it surely runs: the kill checks it is still that one.
    this.inner = options.pty ? this.pid.then((pid) => see(pid)).catch(() => null) : Promise.resolve(null);
  }

  private changed(): void {
    this.waiters.changed();
  }

  /** Resolves with `check()`'s first truthy value, re-checked on every output; fails after `ms` showing all output. */
  until<T>(check: () => T | null | undefined | false, what: string, ms = 20_000): Promise<T> {
    const exited = () => (this.child.exitCode !== null || this.child.signalCode !== null) && !running.has(this);
    return this.waiters.until(check, what, ms, () => (exited() ? 'heph-jobs exited' : null));
  }

  /** Waits for `pattern` in the (plain) output after the last match; returns the text up to and including it. */
  async next(pattern: RegExp | string, ms = 20_000): Promise<string> {
    const regex = typeof pattern === 'string' ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : pattern;
    const upTo = await this.until(
      () => {
        const rest = plain(this.out).slice(this.cursor);
        const match = regex.exec(rest);
        return match ? rest.slice(0, match.index + match[0].length) : null;
      },
      `${regex} in the output`,
      ms,
    );
    // plain() of a longer output only grows at its end, so an offset into it stays valid.
    this.cursor += upTo.length;
    return upTo;
  }

  /** The plain output not yet passed by `next()`. */
  get pending(): string {
    return plain(this.out).slice(this.cursor);
  }

  write(text: string): void {
    this.child.stdin!.write(text);
  }

  /** Types `text` one character at a time, each after the terminal has echoed the previous
   * (readline treats a multi-character chunk as a paste: no completion in it). */
  async type(text: string): Promise<void> {
    for (const char of text) {
      const before = this.out.length;
      this.write(char);
      if (char >= ' ') await this.until(() => this.out.length > before, `the echo of ${JSON.stringify(char)}`);
    }
  }

  endInput(): void {
    this.child.stdin!.end();
  }

  transcript(): string {
    return `--- stdout ---\n${plain(this.out)}\n--- stderr ---\n${this.err}`;
  }

  /**
   * Kills the relay (our child) and the heph-jobs it started (through a pidfd, only while its pid
   * still names the process seen when the relay named it), then waits until both are gone.
   */
  async kill(): Promise<void> {
    const inner = await Promise.race([this.inner, Promise.resolve(null)]);
    if (inner !== null) signalIfSame(inner, 'SIGKILL');
    this.child.kill('SIGKILL'); // Node signals a child only until it has reaped it
    await this.exited;
    if (inner !== null) await waitUntil(() => isReaped(inner), `heph-jobs process ${inner.pid} to be reaped`);
  }
}

export function startCli(args: readonly string[], options: CliOptions = {}): CliProcess {
  return new CliProcess(args, options);
}
