/**
 * The terminal a `tty: true` job runs on: what it is (size, echo, TERM), decided here; the addon
 * opens the pair (native/pty.cc) and makes the slave the job's controlling terminal and fds 0-2.
 */
import fs from 'node:fs';
import { native } from '../native.js';
import { TERMINAL_COLUMNS, TERMINAL_ROWS } from '../../src/protocol/terminal.js';

/**
 * Echo stays on, as on any terminal: the transcript then reads as a person saw it (`name? bob`,
 * then `hi bob` on the next line), so a model that reads the output later, without the call that
 * answered, sees which answer went to which prompt. Programs that read a secret turn echo off
 * themselves (getpass, `read -s`), so a password is not shown.
 */
export const TERMINAL_ECHO = true;

/**
 * TERM for a job terminal. Our reader is no terminal emulator: it keeps lines and removes escape
 * sequences when a report is read. `dumb` says so truthfully, so programs leave out cursor
 * movement, colour and redrawn progress bars (and Python's REPL, `less` and others fall back to
 * plain lines), while they still see a terminal: they line-buffer and prompt. It replaces an
 * inherited TERM, which describes the host's terminal, not this one.
 */
const TERMINAL_TYPE = 'TERM=dumb';

export interface Terminal {
  master: number;
  slave: number;
}

export function openTerminal(): Terminal {
  return native.openPty(TERMINAL_COLUMNS, TERMINAL_ROWS, TERMINAL_ECHO);
}

/** The job's environment on a terminal: `env` with TERM set to what the terminal is. */
export function terminalEnv(env: readonly string[]): string[] {
  return [...env.filter((entry) => !entry.startsWith('TERM=')), TERMINAL_TYPE];
}

/**
 * The supervisor's side of a job's terminal once the job runs. The supervisor keeps the slave open
 * until the job is cleaned up: the master then never reports a hang-up. libuv takes a hang-up after
 * a short read for the end of the data (right for a pipe, whose read returns all it holds), but a
 * terminal hands out at most about 4 KiB per read, so the rest of the job's last output would be
 * lost; instead, once every process of the job is gone, `drain` reads the master until it is empty.
 */
export class JobTerminal {
  private slave: number;

  constructor(private readonly pair: Terminal) {
    this.slave = pair.slave;
  }

  /** Reads what the master still holds (no process writes any more), then closes the slave. */
  drain(buffer: Buffer, push: (chunk: Buffer) => void): void {
    for (;;) {
      let bytes: number;
      try {
        bytes = fs.readSync(this.pair.master, buffer, 0, buffer.length, null);
      } catch {
        break; // EAGAIN: empty; EIO or EBADF: nothing more to read either
      }
      if (bytes <= 0) break;
      push(buffer.subarray(0, bytes));
    }
    this.closeSlave();
  }

  closeSlave(): void {
    if (this.slave < 0) return;
    native.closeFd(this.slave);
    this.slave = -1;
  }
}
