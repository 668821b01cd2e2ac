/** The descriptors a supervisor starts with. */
import fs from 'node:fs';

/** O_CLOEXEC as /proc/PID/fdinfo prints it (octal flags; asm-generic/fcntl.h). */
const O_CLOEXEC = 0o2000000;

/** The head of an fdinfo file: its "flags:" line is the second, well inside (fs/proc/fd.c). */
const FDINFO_HEAD = 64;

/**
 * Closes descriptors the runtime's process leaked to us (opened without close-on-exec, which
 * libuv's spawn passes on): we must not keep a pipe its host waits on open. Everything Node and
 * libuv open is close-on-exec, and 0-2 and the channel are ours, so only those are kept.
 */
export function closeInheritedDescriptors(lastKept: number): void {
  // One small buffer for every fdinfo read, not a string per file (it runs before the hello).
  const head = Buffer.alloc(FDINFO_HEAD);
  for (const name of fs.readdirSync('/proc/self/fd')) {
    const fd = Number(name);
    if (fd <= lastKept) continue;
    try {
      const fdinfo = fs.openSync(`/proc/self/fdinfo/${fd}`, 'r');
      let length: number;
      try {
        length = fs.readSync(fdinfo, head, 0, FDINFO_HEAD, 0);
      } finally {
        fs.closeSync(fdinfo);
      }
      const info = head.toString('latin1', 0, length);
      const flags = Number.parseInt(/^flags:\s+([0-7]+)/m.exec(info)?.[1] ?? '0', 8);
      if ((flags & O_CLOEXEC) === 0) fs.closeSync(fd);
    } catch {
      // The directory's own fd, already closed: nothing to do.
    }
  }
}
