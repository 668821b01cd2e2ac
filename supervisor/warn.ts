/**
 * The supervisor's warnings, on its stderr (which the runtime keeps the tail of for its "supervisor
 * lost" message). Written with one write(2), not through process.stderr: that stream is a
 * net.Socket made at its first use, ~1 ms of a start that usually warns of nothing (bench: start),
 * and a pipe's stream writes synchronously on Linux anyway. A runtime that died (EPIPE) or a full
 * pipe the runtime does not read (EAGAIN) loses the warning, never the supervisor.
 */
import fs from 'node:fs';

const STDERR_FD = 2;

export function warn(message: string): void {
  try {
    fs.writeSync(STDERR_FD, `heph-jobs supervisor: ${message}\n`);
  } catch {
    // No one to tell.
  }
}

/**
 * Node itself writes to process.stderr (its own warnings): a write there after the runtime died
 * must not crash us before cleanup. Called once the hello is answered, so that the stream is not
 * made on the way to it.
 */
export function guardStderrStream(): void {
  process.stderr.on('error', () => {});
}
