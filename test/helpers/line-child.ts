/**
 * A fixture process that answers in JSON lines on stdout and may be driven by lines on stdin: a
 * test waits for the next answer that has a given key, with the fixture's exit (or an `error`
 * answer) turned into a failure that says so instead of a hang.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';

export class LineChild {
  readonly child: ChildProcess;
  private readonly lines: Record<string, unknown>[] = [];
  private readonly waiters: (() => void)[] = [];

  constructor(script: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'], env });
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(JSON.parse(line) as Record<string, unknown>);
      this.wake();
    });
    this.child.once('exit', () => this.wake());
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Answers received so far and not yet taken by `next`. */
  pending(): readonly Record<string, unknown>[] {
    return this.lines;
  }

  /** The next answer that has `key` (an `error` answer, or the process's exit first: a failure). */
  async next(key: string): Promise<Record<string, unknown>> {
    for (;;) {
      const found = this.lines.find((line) => key in line || 'error' in line);
      if (found) {
        this.lines.splice(this.lines.indexOf(found), 1);
        if ('error' in found) throw new Error(`the fixture answered with an error: ${String(found.error)}`);
        return found;
      }
      if (this.exited) throw new Error(`the fixture exited (${this.child.exitCode ?? this.child.signalCode}) before answering ${key}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  /** SIGKILLs the process (if it still runs) and waits until it has exited. */
  async kill(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }

  /** Sends `line` (a fixture's "close") and waits for the process to exit. */
  async closeWith(line: string): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.send(line);
    await exited;
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }
}
