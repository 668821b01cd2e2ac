/**
 * A job's output plumbing: the pipes (or the terminal's master) it writes, read into its ring. The
 * pipes are wrapped in sockets once the spawn's reply is out; a pipe already at its end is read to
 * it instead; a stderr chunk first takes in what stdout holds, so a stderr line never shows ahead
 * of a stdout line written before it.
 */
import fs from 'node:fs';
import net from 'node:net';
import { native } from '../native.js';
import { tty as ttyModule } from '../lazy-builtins.js';
import type { OutputRing } from '../output/index.js';
import { injectFault } from './faults.js';
import type { JobTerminal } from './terminal.js';

type StreamName = 'stdout' | 'stderr';

/** The one read buffer of the supervisor (a pipe holds at most 1 MiB; we grow each job's so). */
const READ_BUFFER_BYTES = 256 * 1024;
const sharedReadBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
/** Where stdout is read when a stderr chunk comes in (the stderr chunk is in the shared buffer). */
const stdoutCatchUpBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
/** Reads of a pipe before wrapping it that may still find its end (see readIfAtEnd). */
const AT_END_MAX_READS = 4;

export class JobOutput {
  private readonly streams: net.Socket[] = [];
  /** Output pipes not wrapped in sockets yet (see wrap). */
  private raw: { fd: number; name: StreamName }[] = [];
  /** wrap has taken every output pipe: each is in `streams` or was read to its end. */
  private taken = false;
  /** The stdout pipe while stdout and stderr are apart: read before each stderr chunk is kept. */
  private stdoutPipe: { fd: number; stream: net.Socket } | null = null;

  /** A `tty: true` job's terminal: the master it reads and writes, and the slave it keeps open. */
  terminal: JobTerminal | null = null;

  /**
   * `changed`: new output is in the ring (waiting reads are woken after this turn's poll). A job on
   * a terminal (`onTerminal`) writes one stream to its master, given by attachTerminal.
   */
  constructor(
    private readonly ring: OutputRing,
    private readonly changed: () => void,
    pipes: { stdout: number; stderr: number },
    onTerminal: boolean,
  ) {
    if (!onTerminal) this.raw.push({ fd: pipes.stdout, name: 'stdout' });
    if (pipes.stderr >= 0) this.raw.push({ fd: pipes.stderr, name: 'stderr' });
  }

  /** Reads `terminal`'s master into the ring from now on (one stream, in the order written). */
  attachTerminal(terminal: JobTerminal, master: number): net.Socket {
    this.terminal = terminal;
    return this.attach(master, 'stdout', true);
  }

  /**
   * Wraps the output pipes in sockets, once the spawn's reply is out: a socket costs tens of
   * microseconds, and nothing is lost meanwhile (what the job writes waits in the pipe). A pipe
   * already at its end (a short job that is done by now: every writer gone) is read to it and
   * closed instead, without a socket. False when a wrap failed: the pipes left are closed, and the
   * job must be stopped (a job whose output cannot be read must not run on unseen). `drained`: the
   * job is over already, so the pipes are only closed.
   */
  wrap(drained: boolean): boolean {
    const raw = this.raw.splice(0);
    if (drained) {
      for (const { fd } of raw) native.closeFd(fd);
      return true;
    }
    try {
      while (raw.length > 0) {
        const { fd, name } = raw[0]!;
        injectFault('job-output');
        if (this.readIfAtEnd(fd, name)) native.closeFd(fd);
        else this.attach(fd, name);
        raw.shift();
      }
      this.taken = true;
      return true;
    } catch {
      for (const { fd, name } of raw) {
        native.closeFd(fd);
        this.ring.end(name);
      }
      return false;
    }
  }

  /** Every output pipe is at end of file and read to it (a terminal's master never is before cleanup). */
  get ended(): boolean {
    return this.taken && this.terminal === null && this.streams.every((stream) => stream.readableEnded);
  }

  /** The streams still open (their pipes may hold bytes the job wrote before its end). */
  get open(): net.Socket[] {
    return this.streams.filter((stream) => !stream.destroyed);
  }

  /** Every process is gone: what the terminal still holds is read now, and it is closed. */
  drainTerminal(): void {
    if (!this.terminal) return;
    this.terminal.drain(sharedReadBuffer, (chunk) => this.ring.push('stdout', chunk));
    this.ring.end('stdout');
    this.changed();
    for (const stream of this.streams) stream.destroy(); // the master's (a terminal job has no other)
  }

  /** Stops reading: every stream closed. */
  close(): void {
    for (const stream of this.streams) stream.destroy();
  }

  /** A job whose setup failed: the pipes not wrapped yet closed, and every stream. */
  discard(): void {
    for (const { fd } of this.raw.splice(0)) native.closeFd(fd);
    this.close();
  }

  /**
   * Reads what pipe `fd` holds now; true once it is at end of file (the ring then knows it ended).
   * False when its writer is still there (EAGAIN) or after a bounded
   * amount (a job writing fast is read by its socket, not by this loop).
   */
  private readIfAtEnd(fd: number, name: StreamName): boolean {
    // Our end only (the job's end is its own file description, and blocks as a job expects);
    // its socket would set this too.
    native.setNonBlocking(fd);
    const read = readHeld(fd, sharedReadBuffer, { maxReads: AT_END_MAX_READS, shortReadEmpties: false }, (chunk) => {
      if (name === 'stderr') this.catchUpStdout();
      this.ring.push(name, chunk);
      this.changed();
    });
    if (read !== 'end') return false;
    this.ring.end(name);
    this.changed();
    return true;
  }

  /**
   * Two pipes keep no order between them: what both hold when the supervisor reads has no order
   * the kernel could tell. One promise is kept: a stderr line is never shown before a stdout line
   * written before it (a build's "Build failed" never lands above its last "compiling ..." line).
   * A stderr chunk has just been read; every stdout line written before any of its lines is in the
   * stdout pipe by now, so stdout is read to empty first (at most the pipe's 1 MiB) and kept
   * ahead of it. A stderr line may still come after stdout lines written after it.
   */
  private catchUpStdout(): void {
    const pipe = this.stdoutPipe;
    if (!pipe || pipe.stream.destroyed || pipe.stream.readableEnded) return;
    try {
      // At its end, libuv sees that on its next read.
      readHeld(pipe.fd, stdoutCatchUpBuffer, { maxReads: Infinity, shortReadEmpties: true }, (chunk) => this.ring.push('stdout', chunk));
    } catch {
      // A read that failed: the socket's own read reports it.
    }
  }

  private attach(fd: number, name: StreamName, terminal = false): net.Socket {
    // Reads land in one buffer shared by every stream of every job (the ring copies what it keeps
    // before push returns, and reads run one at a time on this thread), so a flood allocates
    // nothing per read for the garbage collector to catch up with.
    // A terminal's master is no pipe or socket to net.Socket; tty.ReadStream gives it libuv's TTY
    // handle (which leaves the master non-blocking as openPty made it) and is a net.Socket too.
    const options = {
      onread: {
        buffer: sharedReadBuffer,
        callback: (bytes: number, buffer: Uint8Array) => {
          if (name === 'stderr') this.catchUpStdout();
          this.ring.push(name, Buffer.from(buffer.buffer, buffer.byteOffset, bytes));
          this.changed();
          return true;
        },
      },
    };
    const stream = terminal
      ? new (ttyModule().ReadStream)(fd, options as net.SocketConstructorOpts)
      : new net.Socket({ fd, readable: true, writable: false, ...options } as net.SocketConstructorOpts);
    // A terminal's read stream starts only when asked (tty.ReadStream's manualStart).
    if (terminal) stream.resume();
    else if (name === 'stdout') this.stdoutPipe = { fd, stream };
    stream.on('end', () => {
      this.ring.end(name);
      this.changed();
    });
    stream.on('error', () => {
      this.ring.end(name);
      this.changed();
    });
    this.streams.push(stream);
    return stream;
  }
}

/**
 * Reads what the non-blocking pipe `fd` holds now into `buffer`, each chunk handed to `push` (which
 * copies what it keeps) before the next read, at most `maxReads` reads: 'end' at end of file,
 * 'empty' once it holds nothing more (EAGAIN; with `shortReadEmpties`, also a read shorter than
 * the buffer, which emptied it: one system call saved), 'more' at the bound. Other errors throw.
 */
function readHeld(
  fd: number,
  buffer: Buffer,
  { maxReads, shortReadEmpties }: { maxReads: number; shortReadEmpties: boolean },
  push: (chunk: Buffer) => void,
): 'end' | 'empty' | 'more' {
  for (let reads = 0; reads < maxReads; reads++) {
    let bytes: number;
    try {
      bytes = fs.readSync(fd, buffer, 0, buffer.length, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return 'empty';
      throw error;
    }
    if (bytes === 0) return 'end';
    push(buffer.subarray(0, bytes));
    if (shortReadEmpties && bytes < buffer.length) return 'empty';
  }
  return 'more';
}
