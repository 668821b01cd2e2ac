/**
 * The `heph-jobs` binary on a real terminal: a tmux session (120 x 40) on a tmux server of its own
 * (`-L`, a socket named for this test process), driven with send-keys and read with capture-pane,
 * which shows the screen as a person sees it (colours too, with `-e`). Every wait is for the screen
 * to show something, with a deadline whose failure shows the screen. After each test, each session
 * is killed by its own name and its heph-jobs process awaited until it is reaped; its private
 * state directory (XDG_STATE_HOME, where the history goes) is removed, and so is the socket file
 * the ended server leaves.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { CLI } from './cli.js';
import { isReaped, see, waitUntil, type SeenProcess } from './kernel.js';
import { BOUNDED } from './bounded.js';

const SOCKET = `heph-test-${process.pid}`;
const open = new Set<TmuxShell>();
let made = 0;
/** The server's socket file, which tmux leaves behind when its last session ends. */
let socketPath: string | null = null;

afterEach(async () => {
  await Promise.all([...open].map((session) => session.kill()));
  if (socketPath !== null) fs.rmSync(socketPath, { force: true });
  socketPath = null;
});

function tmux(...args: string[]): string {
  // -f /dev/null: no user configuration (it only matters when the server starts).
  return execFileSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { ...BOUNDED, encoding: 'utf8' });
}

/**
 * Starts a session. When the previous test ended the server's last session, that server exits on
 * its own, and a new-session that reaches it while it exits fails with "server exited
 * unexpectedly": then the next attempt starts a fresh server. Any other failure is thrown at once.
 */
function startSession(args: string[]): void {
  for (let attempt = 1; ; attempt++) {
    try {
      tmux(...args);
      return;
    } catch (error) {
      if (attempt >= 50 || !String((error as Error).message).includes('server exited unexpectedly')) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

function quote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** SGR sequences (colour, reverse) taken out, for matching text on a screen captured with colours. */
export function withoutSgr(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m/g, '');
}

export interface TmuxOptions {
  /** Variables set for heph-jobs (besides PATH, HOME and TERM, which it inherits). */
  env?: Record<string, string>;
  /** Its XDG state directory. Default: a new temporary one, removed after the test. */
  stateDir?: string;
  cwd?: string;
}

export class TmuxShell {
  readonly name = `heph-${process.pid}-${++made}`;
  readonly stateDir: string;
  private readonly ownState: boolean;
  private process: SeenProcess | null = null;
  private killed = false;

  constructor(args: readonly string[], options: TmuxOptions = {}) {
    this.ownState = options.stateDir === undefined;
    this.stateDir = options.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-state-'));
    const env = { XDG_STATE_HOME: this.stateDir, ...options.env };
    const command = `exec ${[process.execPath, CLI, ...args].map(quote).join(' ')}`;
    const envFlags = Object.entries(env).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
    // remain-on-exit: the screen stays readable after heph-jobs has ended (the session's last words).
    startSession(['new-session', '-d', '-s', this.name, '-x', '120', '-y', '40', '-c', options.cwd ?? process.cwd(), ...envFlags, command, ';', 'set-option', '-t', this.name, 'remain-on-exit', 'on']);
    open.add(this);
    socketPath ??= tmux('display-message', '-p', '-t', this.name, '#{socket_path}').trim();
    this.process = see(Number(tmux('display-message', '-p', '-t', this.name, '#{pane_pid}').trim()));
  }

  /** The heph-jobs process (the pane's, which `exec` made heph-jobs itself). */
  get pid(): number {
    return this.process!.pid;
  }

  /** Keys by tmux's names (`Enter`, `C-c`, `Up`), each its own argument. */
  keys(...keys: string[]): void {
    tmux('send-keys', '-t', this.name, ...keys);
  }

  /** Text typed as it is (no key names). */
  type(text: string): void {
    tmux('send-keys', '-t', this.name, '-l', text);
  }

  /**
   * Text typed as it is, then a wait until heph-jobs has read it (its `rchar` in /proc/PID/io grew
   * by that many bytes): keys typed next come in a read of their own, as a person's later keys do
   * (send-keys returns before the shell has read anything, so two calls may land in one read).
   */
  async typeRead(text: string): Promise<void> {
    const before = bytesRead(this.pid);
    this.type(text);
    const wanted = before + Buffer.byteLength(text);
    await waitUntil(() => bytesRead(this.pid) >= wanted, `heph-jobs to read ${JSON.stringify(text)}`, 10_000, () => this.screen());
  }

  /** A command line: typed, then Enter. */
  line(text: string): void {
    this.type(text);
    this.keys('Enter');
  }

  /** The screen: its lines, trailing blanks trimmed; `colours` keeps the SGR sequences. */
  screen(colours = false): string {
    return tmux('capture-pane', '-p', ...(colours ? ['-e'] : []), '-t', this.name).replace(/\s+$/, '');
  }

  /** Waits until `check(screen)` is truthy; fails after `ms` showing the screen. */
  async until<T>(check: (screen: string) => T | null | undefined | false, what: string, ms = 20_000, colours = false): Promise<T> {
    let value: T | null | undefined | false = null;
    let last = '';
    try {
      await waitUntil(() => {
        last = this.screen(colours);
        value = check(last);
        return Boolean(value);
      }, what, ms);
    } catch {
      throw new Error(`timed out after ${ms} ms waiting for ${what}; the screen:\n${last}`);
    }
    return value as T;
  }

  /** Waits for `pattern` on the screen (colours removed unless `colours`); returns the screen. */
  async see(pattern: RegExp | string, ms = 20_000, colours = false): Promise<string> {
    const found = (screen: string) => (typeof pattern === 'string' ? screen.includes(pattern) : pattern.test(screen));
    return this.until((screen) => (found(screen) ? screen : null), String(pattern), ms, colours);
  }

  /** Whether heph-jobs has exited and been reaped. */
  get gone(): boolean {
    return isReaped(this.process!);
  }

  /** Kills this session (by its name) and waits until heph-jobs is gone. */
  async kill(): Promise<void> {
    if (!this.killed) {
      this.killed = true;
      try {
        tmux('kill-session', '-t', this.name);
      } catch {
        // the session ended with heph-jobs
      }
    }
    await waitUntil(() => isReaped(this.process!), `heph-jobs (pid ${this.process!.pid}) to exit after its terminal closed`);
    open.delete(this);
    if (this.ownState) fs.rmSync(this.stateDir, { recursive: true, force: true });
  }
}

/** Bytes a process has read with read(2) and the like, from /proc/PID/io. */
function bytesRead(pid: number): number {
  const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/^rchar: (\d+)$/m.exec(io)![1]);
}
