/**
 * The lock service's hashes and random tokens, without loading node:crypto where it is not needed.
 * Loading it (with the ~15 internal modules it brings) adds ~0.5 MB of the supervisor's own memory
 * and ~0.4 MB of the node binary's pages to every supervisor (bench: memory), and every supervisor
 * makes random tags at its start (the vault's adopt). Random bytes come from the kernel
 * (/dev/urandom, what node:crypto's come from too); node:crypto is loaded when the first lock
 * needs a hash or a random integer, so a runtime that takes no lock never pays for it.
 */
import fs from 'node:fs';
import { crypto as loadCrypto } from '../lazy-builtins.js';

/** `bytes` random bytes from the kernel, as hex. */
export function randomHex(bytes: number): string {
  const buffer = Buffer.alloc(bytes);
  const fd = fs.openSync('/dev/urandom', 'r');
  try {
    for (let at = 0; at < bytes; ) at += fs.readSync(fd, buffer, at, bytes - at, null);
  } finally {
    fs.closeSync(fd);
  }
  return buffer.toString('hex');
}

/** A random integer in [min, max). */
export function randomInt(min: number, max: number): number {
  return loadCrypto().randomInt(min, max);
}

/** The SHA-256 of `text`, as hex. */
export function sha256Hex(text: string): string {
  return loadCrypto().createHash('sha256').update(text).digest('hex');
}
