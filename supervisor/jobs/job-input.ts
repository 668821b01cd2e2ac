/**
 * A job's input, as `write` requests reach it: a pipe to its stdin (`stdin: true`), or the master
 * of its terminal (`tty: true`). Either way a write resolves once the bytes are with the kernel,
 * the job is gone, or the job has not read for INPUT_BOUND_MS; nothing here ever blocks the
 * supervisor's loop, and nothing is left queued here when a write gives up (issue 28, item 8).
 */
import fs from 'node:fs';
import { native } from '../native.js';
import type { InputWrite } from '../../src/protocol/messages.js';

/** How long a write waits for a job that leaves its pipe or terminal full before it answers. */
export const INPUT_BOUND_MS = 1000;

export interface JobInput {
  /** Writes what the job takes within INPUT_BOUND_MS: how much went in, and whether it stalled. */
  write(data: Uint8Array): Promise<InputWrite>;
  /** End of input: the pipe's write end closed, or the terminal's end-of-file character sent. True once done. */
  end(): Promise<boolean>;
  /** Gives up at once (the job is over): pending writes resolve, the pipe is closed. */
  destroy(): void;
  readonly destroyed: boolean;
}

/** How soon a write the full pipe or input queue refused (EAGAIN) is tried again. */
const FULL_RETRY_MS = 10;

interface Pending {
  data: Uint8Array;
  written: number;
  queuedAt: number;
  deadline: number;
  resolve: (outcome: InputWrite) => void;
}

/**
 * Writes to a non-blocking descriptor in order, retried on a timer while the job leaves it full;
 * an item not done by its deadline is answered with what went in, and the rest is dropped.
 * `isOpen` says whether `fd` is still ours (a closed number, perhaps reused, is never written to).
 */
function nonBlockingWriter(fd: number, isOpen: () => boolean) {
  const queue: Pending[] = [];
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  const settle = (item: Pending, stalled: boolean) =>
    item.resolve({ bytes: item.data.length, written: item.written, stalled, waitedMs: Date.now() - item.queuedAt });
  const settleAll = () => {
    for (const item of queue.splice(0)) settle(item, false);
  };
  const pump = (): void => {
    timer = null;
    while (queue.length > 0) {
      if (stopped || !isOpen()) return settleAll();
      const item = queue[0]!;
      let count: number;
      try {
        count = fs.writeSync(fd, item.data, item.written);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          if (Date.now() >= item.deadline) {
            queue.shift();
            settle(item, true);
            continue;
          }
          timer = setTimeout(pump, FULL_RETRY_MS);
          return;
        }
        return settleAll(); // EPIPE, EIO: nothing reads it any more
      }
      item.written += count;
      if (item.written < item.data.length) continue;
      queue.shift();
      settle(item, false);
    }
  };
  return {
    write(data: Uint8Array): Promise<InputWrite> {
      if (data.length === 0) return Promise.resolve({ bytes: 0, written: 0, stalled: false, waitedMs: 0 });
      return new Promise<InputWrite>((resolve) => {
        const now = Date.now();
        queue.push({ data, written: 0, queuedAt: now, deadline: now + INPUT_BOUND_MS, resolve });
        if (queue.length === 1 && timer === null) pump();
      });
    },
    stop(): void {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      settleAll();
    },
    get stopped() {
      return stopped;
    },
  };
}

/** The write end of a stdin pipe (ours alone: non-blocking; the job's end blocks as a job expects). */
export function pipeInput(fd: number): JobInput {
  native.setNonBlocking(fd);
  let open = true;
  const writer = nonBlockingWriter(fd, () => open);
  const close = () => {
    writer.stop();
    if (!open) return;
    open = false;
    native.closeFd(fd);
  };
  return {
    write: (data) => writer.write(data),
    end: async () => {
      close();
      return true;
    },
    destroy: close,
    get destroyed() {
      return !open;
    },
  };
}

/**
 * The terminal's end-of-file character (VEOF, Ctrl-D: the kernel's default, which openPty keeps).
 * In canonical mode it hands over the line typed so far, or, on an empty line, makes read() return 0.
 */
const EOF_CHARACTER = 0x04;

/**
 * Writes to a terminal's master. The master is non-blocking and belongs to the stream that reads
 * it (`isOpen` says whether that stream still holds the descriptor); libuv's TTY handle writes to
 * a master synchronously, so writes go through fs.writeSync here.
 */
export function terminalInput(fd: number, isOpen: () => boolean): JobInput {
  const writer = nonBlockingWriter(fd, isOpen);
  /** Bytes of a line have been written and no newline yet: Ctrl-D would only hand them over. */
  let lineOpen = false;
  return {
    write(data) {
      if (data.length > 0) lineOpen = data[data.length - 1] !== 0x0a;
      return writer.write(data);
    },
    async end() {
      const eof = lineOpen ? Uint8Array.of(EOF_CHARACTER, EOF_CHARACTER) : Uint8Array.of(EOF_CHARACTER);
      lineOpen = false;
      const sent = await writer.write(eof);
      return sent.written === sent.bytes;
    },
    destroy() {
      writer.stop();
    },
    get destroyed() {
      return writer.stopped || !isOpen();
    },
  };
}
