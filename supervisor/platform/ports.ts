/**
 * The TCP ports a set of processes listen on, from /proc alone (no child process, no netlink):
 * the processes' socket inodes (readlink of /proc/PID/fd/* is `socket:[INODE]`) matched against
 * the LISTEN entries of /proc/PID/net/tcp and tcp6. See proc(5) (/proc/net/tcp) and
 * net/ipv4/tcp_ipv4.c, net/ipv6/tcp_ipv6.c (get_tcp4_sock, get_tcp6_sock) for the format.
 *
 * /proc/net/tcp lists the sockets of the *reader's* network namespace, so the tables are read
 * through /proc/PID/net/ of a process that owns sockets, once per distinct network namespace among
 * the processes (a job may run `unshare -n`). A socket created in one namespace by a process that
 * later moved to another (setns) is not found; nothing short of sock_diag would find it.
 */
import fs from 'node:fs';
import { withOpenFile } from './procfs.js';

export type IpFamily = 4 | 6;

export interface ListeningPort {
  port: number;
  /** Local address as text: `0.0.0.0`, `127.0.0.1`, `::`, `::1`, `::ffff:127.0.0.1`, ... */
  address: string;
  family: IpFamily;
}

/** One LISTEN line of /proc/net/tcp{,6}. */
export interface TcpListenEntry extends ListeningPort {
  inode: number;
}

/** TCP_LISTEN in include/net/tcp_states.h, as /proc/net/tcp prints it (`%02X`). */
const LISTEN = '0A';
const SYN_RECV = '03';

/** A read of /proc/net/tcp{,6} this short was the last one (see readListenSection). */
const SURELY_LAST_READ = 4096 - 256;

/** `0100007F` (a 32-bit word printed in host order, little-endian here) to `127.0.0.1`. */
function decodeIpv4(hex: string): string | null {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex)) return null;
  const word = parseInt(hex, 16);
  return `${word & 0xff}.${(word >>> 8) & 0xff}.${(word >>> 16) & 0xff}.${word >>> 24}`;
}

/**
 * 32 hex digits, four 32-bit words each printed in host (little-endian) order, to RFC 5952 text:
 * lower case, the longest run of two or more zero groups as `::`, IPv4-mapped as `::ffff:a.b.c.d`.
 */
function decodeIpv6(hex: string): string | null {
  if (!/^[0-9A-Fa-f]{32}$/.test(hex)) return null;
  const bytes: number[] = [];
  for (let word = 0; word < 4; word++) {
    const value = parseInt(hex.slice(word * 8, word * 8 + 8), 16);
    bytes.push(value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, value >>> 24);
  }
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return `::ffff:${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  }
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > bestLength) {
      bestStart = i;
      bestLength = end - i;
    }
    i = end;
  }
  const text = (from: number, to: number) => groups.slice(from, to).map((group) => group.toString(16)).join(':');
  if (bestStart < 0) return text(0, 8);
  return `${text(0, bestStart)}::${text(bestStart + bestLength, 8)}`;
}

/** `ADDR:PORT` (hex) as printed in the local_address column. */
export function decodeSocketAddress(field: string, family: IpFamily): { address: string; port: number } | null {
  const colon = field.indexOf(':');
  if (colon < 0) return null;
  const portHex = field.slice(colon + 1);
  if (!/^[0-9A-Fa-f]{4}$/.test(portHex)) return null;
  const address = family === 4 ? decodeIpv4(field.slice(0, colon)) : decodeIpv6(field.slice(0, colon));
  return address === null ? null : { address, port: parseInt(portHex, 16) };
}

/**
 * The LISTEN entries of the text of /proc/net/tcp (family 4) or /proc/net/tcp6 (family 6). Lines
 * in any other state, the header, and lines that do not parse are skipped.
 *
 *   `   0: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000  0 184189 1 ...`
 *       sl  local        remote        st tx:rx queue       tr:when     retrnsmt  uid timeout inode
 */
export function parseProcNetTcp(text: string, family: IpFamily): TcpListenEntry[] {
  const entries: TcpListenEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10 || fields[3] !== LISTEN || !fields[0]!.endsWith(':')) continue;
    const local = decodeSocketAddress(fields[1]!, family);
    const inode = Number(fields[9]);
    if (local === null || !Number.isSafeInteger(inode) || inode <= 0) continue;
    entries.push({ port: local.port, address: local.address, family, inode });
  }
  return entries;
}

/**
 * Reads the LISTEN part of a /proc/.../net/tcp{,6} file. The kernel walks the listening hash
 * before the established one (tcp_get_idx: listening_get_first, then established_get_first), so
 * every LISTEN line comes before every connection: reading stops at the first line in a state
 * other than LISTEN or SYN_RECV, which keeps the cost independent of how many connections the
 * machine has. (Kernels before 4.4 printed a listener's pending SYN_RECV requests right after it,
 * inside the listening walk, hence SYN_RECV does not stop the read.)
 *
 * Each read() that reaches the end of the listeners walks the whole established hash (sized by
 * RAM, not by use: about 2 ms on a small VM) looking for what comes next, so a table with no
 * connection costs a walk for the read that returns the listeners and another for the read that
 * returns end of file. The second is skipped: seq_file (fs/seq_file.c, seq_read_iter) returns less
 * than was asked only at the end of the table, or when the next record would not fit in its buffer
 * of at least a page (4096 bytes). Records here are under 200 bytes, so a short read of at most
 * 3840 bytes can only be the end of the table.
 *
 * Null when the file cannot be read (the process is gone, or IPv6 is disabled and tcp6 does not
 * exist).
 */
function readListenSection(file: string): string | null {
  return withOpenFile(file, (fd) => {
    const chunk = Buffer.allocUnsafe(64 * 1024);
    let text = '';
    let scanned = 0;
    for (;;) {
      const count = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (count === 0) return text;
      text += chunk.toString('latin1', 0, count);
      // Look at each complete line once; the header's st column is "st", not a state.
      let newline: number;
      while ((newline = text.indexOf('\n', scanned)) >= 0) {
        const state = text.slice(scanned, newline).trim().split(/\s+/)[3];
        const isHeader = scanned === 0;
        if (!isHeader && state !== LISTEN && state !== SYN_RECV) return text.slice(0, scanned);
        scanned = newline + 1;
      }
      if (count <= SURELY_LAST_READ && scanned === text.length) return text;
    }
  });
}

/** Socket inodes held open by `pid` (readlink of each /proc/PID/fd entry); empty when gone. */
export function socketInodes(pid: number): number[] {
  const dir = `/proc/${pid}/fd`;
  let fds: string[];
  try {
    fds = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const inodes: number[] = [];
  for (const fd of fds) {
    const inode = socketInode(dir, fd);
    if (inode !== null) inodes.push(inode);
  }
  return inodes;
}

/** The socket inode descriptor `fd` of the process whose fd directory is `dir` refers to; null for anything else. */
function socketInode(dir: string, fd: string): number | null {
  let target: string;
  try {
    target = fs.readlinkSync(`${dir}/${fd}`);
  } catch {
    return null; // closed while we looked
  }
  // "socket:[184189]"
  return target.startsWith('socket:[') ? Number(target.slice(8, -1)) : null;
}

function netNamespace(pid: number): string | null {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return null;
  }
}

/**
 * TCP sockets in use in a namespace, from `/proc/.../net/sockstat` (`TCP: inuse 3 ...`) or
 * sockstat6 (`TCP6: inuse 1`): listening sockets count, and it costs no table walk. Null when
 * unknown.
 */
function tcpInUse(base: string, family: IpFamily): number | null {
  try {
    const text = fs.readFileSync(`${base}/${family === 4 ? 'sockstat' : 'sockstat6'}`, 'latin1');
    const match = (family === 4 ? /^TCP: inuse (\d+)/m : /^TCP6: inuse (\d+)/m).exec(text);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/**
 * LISTEN entries of both tables of the namespace `pids` share, read through the first pid whose
 * /proc/PID/net is still readable; the reader's own /proc/net as the last resort.
 *
 * Reading a table costs more than its size suggests: the kernel walks every bucket of the
 * established hash (sized by RAM, not by use) to find what follows the last listener, about 2 ms
 * on a small VM even when the table has three lines. So a table whose family has no TCP socket in
 * use (sockstat, which costs nothing) is not read at all, and a read stops at the first connection.
 */
function listenEntries(pids: number[]): TcpListenEntry[] {
  for (const base of [...pids.map((pid) => `/proc/${pid}/net`), '/proc/net']) {
    const entries: TcpListenEntry[] = [];
    let readable = false;
    for (const family of [4, 6] as const) {
      if (tcpInUse(base, family) === 0) {
        readable = true;
        continue;
      }
      const text = readListenSection(`${base}/${family === 4 ? 'tcp' : 'tcp6'}`);
      if (text === null) continue;
      readable = true;
      entries.push(...parseProcNetTcp(text, family));
    }
    if (readable) return entries;
  }
  return [];
}

/**
 * TCP sockets in LISTEN state owned by any of `pids`, one entry per (family, address, port),
 * sorted by port, then family, then address. A port listened on both as 0.0.0.0 and :: gives two
 * entries. Pids that are gone are skipped. Only the given processes' fds are looked at, and the
 * tables are read only when one of them has a socket at all.
 */
export function listeningPorts(pids: Iterable<number>): ListeningPort[] {
  // Socket inodes, and the pids holding sockets grouped by network namespace.
  const inodes = new Set<number>();
  const byNamespace = new Map<string, number[]>();
  for (const pid of new Set(pids)) {
    const own = socketInodes(pid);
    if (own.length === 0) continue;
    for (const inode of own) inodes.add(inode);
    const namespace = netNamespace(pid) ?? `unknown:${pid}`;
    const group = byNamespace.get(namespace);
    if (group) group.push(pid);
    else byNamespace.set(namespace, [pid]);
  }
  if (inodes.size === 0) return [];

  const found = new Map<string, ListeningPort>();
  for (const group of byNamespace.values()) {
    for (const entry of listenEntries(group)) {
      if (!inodes.has(entry.inode)) continue;
      const key = `${entry.family} ${entry.address} ${entry.port}`;
      if (!found.has(key)) found.set(key, { port: entry.port, address: entry.address, family: entry.family });
    }
  }
  return [...found.values()].sort((a, b) => a.port - b.port || a.family - b.family || a.address.localeCompare(b.address));
}

/** The distinct port numbers, ascending. */
export function uniquePorts(ports: Iterable<ListeningPort>): number[] {
  return [...new Set([...ports].map((entry) => entry.port))].sort((a, b) => a - b);
}


/** Descriptors one port check looks at, at most (a check runs every few tens of ms during a wait). */
export const PORT_CHECK_FD_BUDGET = 1024;

/**
 * Whether a process of a job listens on one TCP port, asked again and again while a wait lasts
 * (`until_port`), at a bounded cost per check. The listening table is read first, through the
 * job leader's network namespace, and only for a LISTEN entry on the port are the job's processes
 * listed and their descriptors looked at, at most PORT_CHECK_FD_BUDGET per check: a check that
 * runs out resumes where the last one stopped, so a job with many descriptors is still found, a
 * few checks later. A process that has moved to another network namespace is not seen here.
 */
export class PortProbe {
  /** Where the scan of descriptors resumes: the process, its fd list, the position in it. */
  private pids: number[] = [];
  private pidIndex = 0;
  private fds: string[] | null = null;
  private fdIndex = 0;

  constructor(readonly port: number) {}

  /** `leader`: a live process of the job (its network namespace); `members`: every process of it. */
  check(leader: number, members: () => readonly number[]): boolean {
    const inodes = new Set(listenEntries([leader]).filter((entry) => entry.port === this.port).map((entry) => entry.inode));
    if (inodes.size === 0) return false;
    if (this.pidIndex >= this.pids.length) {
      this.pids = [...members()];
      this.pidIndex = 0;
      this.fds = null;
    }
    let budget = PORT_CHECK_FD_BUDGET;
    while (this.pidIndex < this.pids.length && budget > 0) {
      const dir = `/proc/${this.pids[this.pidIndex]}/fd`;
      if (this.fds === null) {
        this.fds = readDir(dir);
        this.fdIndex = 0;
      }
      for (; this.fdIndex < this.fds.length && budget > 0; this.fdIndex++, budget--) {
        const inode = socketInode(dir, this.fds[this.fdIndex]!);
        if (inode !== null && inodes.has(inode)) return true;
      }
      if (this.fdIndex >= this.fds.length) {
        this.pidIndex++;
        this.fds = null;
      }
    }
    return false;
  }
}

/** The names in a /proc directory; none when the process is gone. */
function readDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
