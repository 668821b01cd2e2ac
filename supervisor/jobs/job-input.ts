/**
 * A job's input, as `write` requests reach it: a pipe to its stdin (`stdin: true`), or the master
 * of its terminal (`tty: true`). Either way a write resolves once the bytes are with the kernel
 * (or the job is gone), and nothing here ever blocks the supervisor's loop.
 */
import fs from 'node:fs';
import net from 'node:net';

export interface JobInput {
  /** Resolves once `data` is in the pipe or the terminal's input queue, or the reader is gone. */
  write(data: Uint8Array): Promise<void>;
  /** End of input: the pipe's write end closed, or the terminal's end-of-file character sent. */
  end(): Promise<void>;
  /** Gives up at once (the job is over): pending writes resolve, the pipe is closed. */
  destroy(): void;
  readonly destroyed: boolean;
}

/** The write end of a stdin pipe. */
export function pipeInput(fd: number): JobInput {
  const socket = new net.Socket({ fd, readable: false, writable: true });
  // EPIPE when the job stops reading: nothing to do, the job decides what it reads.
  socket.on('error', () => {});
  return {
    write: (data) => new Promise<void>((resolve) => socket.write(data, () => resolve())),
    end: () => new Promise<void>((resolve) => socket.end(() => resolve())),
    destroy: () => socket.destroy(),
    get destroyed() {
      return socket.destroyed;
    },
  };
}

/**
 * The terminal's end-of-file character (VEOF, Ctrl-D: the kernel's default, which openPty keeps).
 * In canonical mode it hands over the line typed so far, or, on an empty line, makes read() return 0.
 */
const EOF_CHARACTER = 0x04;
/** How soon a write the terminal's full input queue refused (EAGAIN) is tried again. */
const FULL_QUEUE_RETRY_MS = 10;

/**
 * Writes to a terminal's master. The master is non-blocking and belongs to the stream that reads
 * it (`isOpen` says whether that stream still holds the descriptor, so a closed number, perhaps
 * reused, is never written to); libuv's TTY handle writes to a master synchronously, so writes go
 * through fs.writeSync here, retried on a timer while the job leaves its input queue full.
 */
export function terminalInput(fd: number, isOpen: () => boolean): JobInput {
  const queue: { data: Uint8Array; resolve: () => void }[] = [];
  let timer: NodeJS.Timeout | null = null;
  let destroyed = false;
  /** Bytes of a line have been written and no newline yet: Ctrl-D would only hand them over. */
  let lineOpen = false;

  const settleAll = () => {
    for (const item of queue.splice(0)) item.resolve();
  };
  const pump = (): void => {
    timer = null;
    while (queue.length > 0) {
      if (destroyed || !isOpen()) return settleAll();
      const item = queue[0]!;
      let written: number;
      try {
        written = fs.writeSync(fd, item.data);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') {
          timer = setTimeout(pump, FULL_QUEUE_RETRY_MS);
          return;
        }
        return settleAll(); // EIO: the terminal was hung up, nothing reads it any more
      }
      if (written < item.data.length) {
        item.data = item.data.subarray(written);
        continue;
      }
      queue.shift();
      item.resolve();
    }
  };
  const enqueue = (data: Uint8Array): Promise<void> => {
    if (data.length === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      queue.push({ data, resolve });
      if (queue.length === 1 && timer === null) pump();
    });
  };
  return {
    write(data) {
      if (data.length > 0) lineOpen = data[data.length - 1] !== 0x0a;
      return enqueue(data);
    },
    end() {
      const eof = lineOpen ? Uint8Array.of(EOF_CHARACTER, EOF_CHARACTER) : Uint8Array.of(EOF_CHARACTER);
      lineOpen = false;
      return enqueue(eof);
    },
    destroy() {
      destroyed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      settleAll();
    },
    get destroyed() {
      return destroyed || !isOpen();
    },
  };
}
