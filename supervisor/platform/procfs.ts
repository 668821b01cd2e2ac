/**
 * Reading the process table from /proc: the fallback containment path's eyes, and the
 * supervisor's when it cleans up after another supervisor that died. See proc(5).
 */
import fs from 'node:fs';

export interface ProcEntry {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** One-letter state: R, S, D, Z, T, ... */
  state: string;
  /** Start time in clock ticks since boot: with the pid, names one process for good. */
  start: string;
  /** In do_exit (PF_EXITING): its memory, and with it its environment, may already be gone. */
  exiting: boolean;
}

/** PF_EXITING in the flags field of /proc/PID/stat (include/linux/sched.h). */
const PF_EXITING = 0x4;

/** Parses /proc/PID/stat (or one thread's, `/proc/PID/task/TID/stat`); null when the process is
 * gone. The command name may contain spaces and parentheses, so fields are read after the last ')'. */
export function readProcStat(pid: number, thread?: number): ProcEntry | null {
  let text: string;
  try {
    text = fs.readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'latin1');
  } catch {
    return null;
  }
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return {
    pid,
    state: fields[0] ?? '?',
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    sid: Number(fields[3]),
    start: onHostBootClock(fields[19] ?? ''),
    exiting: (Number(fields[6]) & PF_EXITING) !== 0,
  };
}

/** Start time of a process in clock ticks since the host's boot (field 22 of /proc/PID/stat): with
 * the pid, it names one process for good, so a recycled pid is told apart. Null when gone. */
export function processStartTime(pid: number): string | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const field = text.slice(text.lastIndexOf(')') + 2).split(' ')[19];
    return field === undefined ? null : onHostBootClock(field);
  } catch {
    return null;
  }
}

/** /proc's clock ticks per second (USER_HZ: 100 on every architecture Node runs on). */
const CLOCK_TICKS_PER_S = 100;
const NS_PER_TICK = 1e9 / CLOCK_TICKS_PER_S;

export interface BootOffset {
  /** Whole clock ticks the kernel adds to start times we read. */
  ticks: number;
  /** False when the offset is not a whole number of ticks: our readings may then be one tick off. */
  exact: boolean;
}

/** The boot-time offset a `/proc/self/timens_offsets` text gives (none: the host's clock). */
export function parseBootOffset(text: string): BootOffset {
  const match = /^boottime\s+(-?\d+)\s+(\d+)\s*$/m.exec(text);
  const seconds = match ? Number(match[1]) : 0;
  const nanoseconds = match ? Number(match[2]) : 0;
  return { ticks: seconds * CLOCK_TICKS_PER_S + Math.floor(nanoseconds / NS_PER_TICK), exact: nanoseconds % NS_PER_TICK === 0 };
}

let bootOffset: BootOffset | null = null;

/** Our time namespace's boot-time offset (read once: setns is the only way to change it). */
function timeNamespaceBootOffset(): BootOffset {
  if (bootOffset !== null) return bootOffset;
  let text = '';
  try {
    text = fs.readFileSync('/proc/self/timens_offsets', 'latin1');
  } catch {
    // No time namespaces in this kernel: every reader shares the host's boot clock.
  }
  bootOffset = parseBootOffset(text);
  return bootOffset;
}

/**
 * A start time as /proc shows it to us, on the host's boot clock: the kernel adds the reader's
 * time-namespace offset, so without this two namespaces name one process differently (issue 28).
 */
export function onHostBootClock(ticks: string, offset: BootOffset = timeNamespaceBootOffset()): string {
  return offset.ticks === 0 || !/^\d+$/.test(ticks) ? ticks : String(Number(ticks) - offset.ticks);
}

/**
 * Whether `recorded` (a start time another instance may have read) names the process we read as
 * `read`. Exact, except in a time namespace whose offset is not a whole number of ticks: our
 * reading may then be one tick off, and a live process must never be taken for a stranger.
 */
export function sameStartTime(recorded: string, read: string | null, offset: BootOffset = timeNamespaceBootOffset()): boolean {
  if (read === null) return false;
  if (recorded === read) return true;
  return !offset.exact && /^\d+$/.test(recorded) && /^\d+$/.test(read) && Math.abs(Number(recorded) - Number(read)) <= 1;
}

/**
 * Opens a /proc (or cgroup) file, runs `read` on its fd and closes it: null when it cannot be
 * opened or read, which for /proc means the process is gone.
 */
export function withOpenFile<T>(file: string, read: (fd: number) => T): T | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    return read(fd);
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

export function listProcesses(): ProcEntry[] {
  const entries: ProcEntry[] = [];
  for (const name of fs.readdirSync('/proc')) {
    const code = name.charCodeAt(0);
    if (code < 48 || code > 57) continue;
    const entry = readProcStat(Number(name));
    if (entry) entries.push(entry);
  }
  return entries;
}

/**
 * One buffer for every environment read: a sweep reads hundreds, one after another on this thread,
 * and a fresh buffer each (as readFileSync makes, in chunks, for a /proc file of unknown size) was
 * a third of their cost. An environment larger than it is read into a buffer of its own.
 */
const ENVIRON_BUFFER = Buffer.allocUnsafe(64 * 1024);
const NUL = Buffer.from([0]);

/** The bytes of /proc/PID/environ (or one thread's), valid until the next call; null when gone or unreadable. */
function readEnviron(pid: number, thread?: number): Buffer | null {
  return withOpenFile(thread === undefined ? `/proc/${pid}/environ` : `/proc/${pid}/task/${thread}/environ`, (fd) => {
    let buffer = ENVIRON_BUFFER;
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger, 0, 0, length);
        buffer = bigger;
      }
      const n = fs.readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) return buffer.subarray(0, length);
      length += n;
    }
  });
}

/**
 * Where the entries of an environment that start with `prefix` start, in order: at 0, and after
 * every NUL that `prefix` follows (one native search, not a loop over every entry).
 */
function entriesStartingWith(environ: Buffer, prefix: string): { start: number; end: number }[] {
  const bytes = Buffer.from(prefix);
  const found: { start: number; end: number }[] = [];
  const add = (start: number) => {
    const end = environ.indexOf(0, start);
    found.push({ start, end: end < 0 ? environ.length : end });
  };
  if (environ.length >= bytes.length && environ.compare(bytes, 0, bytes.length, 0, bytes.length) === 0) add(0);
  const needle = Buffer.concat([NUL, bytes]);
  for (let at = environ.indexOf(needle); at >= 0; at = environ.indexOf(needle, at + 1)) add(at + 1);
  return found;
}

/** The entries of /proc/PID/environ that start with `prefix` (empty when gone or unreadable). */
export function environEntries(pid: number, prefix: string, thread?: number): string[] {
  const environ = readEnviron(pid, thread);
  if (environ === null) return [];
  return entriesStartingWith(environ, prefix).map(({ start, end }) => environ.toString('latin1', start, end));
}

/** True when /proc/PID/environ (or thread `thread`'s) contains exactly `needle` (a `KEY=value` entry). */
export function environContains(pid: number, needle: string, thread?: number): boolean {
  const environ = readEnviron(pid, thread);
  const length = Buffer.byteLength(needle);
  return environ !== null && entriesStartingWith(environ, needle).some(({ start, end }) => end - start === length);
}

/** True when an entry of /proc/PID/environ starts with `prefix` (`HEPH_JOB=123:`). */
export function environHasPrefix(pid: number, prefix: string, thread?: number): boolean {
  const environ = readEnviron(pid, thread);
  return environ !== null && entriesStartingWith(environ, prefix).length > 0;
}

/**
 * The children of `pid` (zombies included). Read from /proc/PID/task/TID/children, one file per
 * thread (orphans reparented to a subreaper may be attached to any of its threads), where the
 * kernel has them (CONFIG_PROC_CHILDREN); else found by a scan of /proc for that ppid.
 */
export function childrenOf(pid: number): number[] {
  return childrenFromTaskFiles(pid) ?? childrenByPpid(pid);
}

/** The children listed in `pid`'s per-thread children files; null when this kernel has none. */
export function childrenFromTaskFiles(pid: number): number[] | null {
  const children: number[] = [];
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return children; // gone
  }
  for (const tid of tasks) {
    try {
      const text = fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').trim();
      if (text) for (const child of text.split(' ')) children.push(Number(child));
    } catch (error) {
      // No such file while the task is still there: the kernel was built without it.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && fs.existsSync(`/proc/${pid}/task/${tid}/stat`)) return null;
      // Otherwise the thread ended while we looked.
    }
  }
  return children;
}

/** The processes whose parent is `pid`, from a scan of /proc (every kernel has this). */
export function childrenByPpid(pid: number, table: ProcEntry[] = listProcesses()): number[] {
  return table.filter((entry) => entry.ppid === pid).map((entry) => entry.pid);
}

/** Every descendant of the given roots (roots included when present), found by walking ppid links. */
export function descendantsOf(roots: Iterable<number>, table: ProcEntry[] = listProcesses()): Set<number> {
  const byParent = new Map<number, number[]>();
  const present = new Set<number>();
  for (const entry of table) {
    present.add(entry.pid);
    const siblings = byParent.get(entry.ppid);
    if (siblings) siblings.push(entry.pid);
    else byParent.set(entry.ppid, [entry.pid]);
  }
  const found = new Set<number>();
  const stack = [...roots].filter((pid) => present.has(pid));
  while (stack.length > 0) {
    const pid = stack.pop()!;
    if (found.has(pid)) continue;
    found.add(pid);
    for (const child of byParent.get(pid) ?? []) stack.push(child);
  }
  return found;
}

/** The cgroup v2 path of a process ("0::/path"), or null. */
export function cgroupOf(pid: number | 'self'): string | null {
  try {
    const text = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8');
    for (const line of text.split('\n')) if (line.startsWith('0::')) return line.slice(3);
  } catch {
    // gone
  }
  return null;
}

/** The user a process runs as, as /proc shows it (the owner of /proc/PID); null when gone. */
export function processOwner(pid: number): number | null {
  try {
    return fs.statSync(`/proc/${pid}`).uid;
  } catch {
    return null;
  }
}

let ownPidNamespaceLink: string | null = null;

/** Our pid namespace as /proc links it (`pid:[<inode>]`): the same text in every namespace. */
function readOwnPidNamespaceLink(): string {
  ownPidNamespaceLink ??= fs.readlinkSync('/proc/self/ns/pid');
  return ownPidNamespaceLink;
}

/**
 * Our pid namespace's inode number (decimal digits): it names the namespace for as long as it
 * lives, and reads the same from every namespace, so it can qualify a pid in a name that other
 * namespaces see (a cgroup subtree's).
 */
export function ownPidNamespace(): string {
  return readOwnPidNamespaceLink().slice('pid:['.length, -1);
}

/**
 * Whether process `pid` lives in our pid namespace: a pid written into a marker by a supervisor
 * in another namespace (a container sharing our view of /proc) means another process there.
 */
export function inOurPidNamespace(pid: number): boolean {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/pid`) === readOwnPidNamespaceLink();
  } catch {
    return false;
  }
}
