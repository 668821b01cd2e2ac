/**
 * What a running job is using right now, for the suffix of its report:
 * `· 3 procs · 112 MB · cpu 4.1s · listening :5173`.
 *
 * Pure file reads (node:fs) of the job's cgroup and of /proc: the supervisor must not start a
 * process (no ps, no ss, no getconf) and does not load child_process. Sources, best first:
 *
 * - procs: the strategy's members (cgroup.procs of the job's cgroup tree, or the /proc scan).
 * - memory: the cgroup's `memory.current` where the memory controller is enabled for it (it
 *   counts page cache too, as the kernel charges it); otherwise the sum of the members' resident
 *   set sizes from /proc/PID/statm. RSS counts a page shared by several members (libraries,
 *   copy-on-write after fork) once per member, so the sum is an upper bound.
 * - cpu: the cgroup's `cpu.stat` `usage_usec` (the cgroup core provides it even with no
 *   controller enabled; it includes processes that have exited and nested cgroups); otherwise
 *   utime+stime+cutime+cstime of the live members from /proc/PID/stat.
 * - ports: TCP ports in LISTEN state on the members' sockets (platform/ports.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { listeningPorts, uniquePorts } from '../platform/ports.js';
import { withOpenFile } from '../platform/procfs.js';
import { readSeqFile } from '../platform/kept-files.js';
import type { ContainmentStrategy, JobIdentity } from '../containment/index.js';

import type { JobStats } from '../../src/protocol/stats.js';

/**
 * USER_HZ: the unit of the times in /proc/PID/stat. It is part of the kernel's ABI and 100 on
 * every Linux architecture Node runs on (the kernel converts from its internal HZ); what
 * `getconf CLK_TCK` would print, without starting getconf.
 */
const USER_HZ = 100;

/** One reusable buffer for the small /proc files read here (statm, stat, cgroup files). */
const buffer = Buffer.allocUnsafe(8192);

/** The whole of a small file, or null when it cannot be read (the process is gone). Fewer system
 * calls than readFileSync (no fstat; /proc files report size 0 anyway), and no read to see the
 * end where a short read already says it (these are seq_files: see readSeqFile). */
function readSmall(file: string): string | null {
  return withOpenFile(file, (fd) => readSeqFile(fd, buffer));
}

function isPowerOfTwo(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0 && (value & (value - 1)) === 0;
}

/** AT_PAGESZ from /proc/self/auxv: the page size the kernel handed this process at exec. */
function pageSizeFromAuxv(): number | null {
  let auxv: Buffer;
  try {
    auxv = fs.readFileSync('/proc/self/auxv');
  } catch {
    return null;
  }
  const AT_NULL = 0;
  const AT_PAGESZ = 6;
  // Pairs of native words (type, value), little or big endian as the machine is.
  const wide = !['arm', 'ia32', 'mips', 'mipsel', 'ppc'].includes(process.arch);
  const little = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  const word = wide ? 8 : 4;
  for (let offset = 0; offset + 2 * word <= auxv.length; offset += 2 * word) {
    const read = (at: number): number =>
      wide
        ? Number(little ? auxv.readBigUInt64LE(at) : auxv.readBigUInt64BE(at))
        : little
          ? auxv.readUInt32LE(at)
          : auxv.readUInt32BE(at);
    const type = read(offset);
    if (type === AT_NULL) break;
    if (type === AT_PAGESZ) return read(offset + word);
  }
  return null;
}

/** This process's VmRSS (kB, from status) over its resident pages (statm), as a power of two. */
function pageSizeFromRss(): number | null {
  const status = readSmall('/proc/self/status');
  const statm = readSmall('/proc/self/statm');
  const rssKb = status === null ? NaN : Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  const pages = statm === null ? NaN : Number(statm.split(' ')[1]);
  if (!(rssKb > 0) || !(pages > 0)) return null;
  // The two reads are not atomic; rounding to a power of two absorbs the drift between them.
  return 2 ** Math.round(Math.log2((rssKb * 1024) / pages));
}

let cachedPageSize: number | null = null;

/** The unit of /proc/PID/statm, in bytes (4096 on x86_64; 16 or 64 KiB on some arm64/ppc64). */
export function pageSize(): number {
  if (cachedPageSize === null) {
    const plausible = (size: number | null): size is number => size !== null && isPowerOfTwo(size) && size >= 4096 && size <= 1 << 20;
    const fromAuxv = pageSizeFromAuxv();
    const fromRss = plausible(fromAuxv) ? null : pageSizeFromRss();
    cachedPageSize = plausible(fromAuxv) ? fromAuxv : plausible(fromRss) ? fromRss : 4096;
  }
  return cachedPageSize;
}

/** A file of the job's cgroup: through its kept descriptor where the job has one (platform/kept-files.ts). */
function readCgroupFile(identity: JobIdentity, name: string): string | null {
  if (identity.files) return identity.files.read(name, buffer);
  return identity.cgroup === null ? null : readSmall(path.join(identity.cgroup, name));
}

/** The first number of a one-number cgroup file (`memory.current`); null when absent. */
function readCgroupNumber(identity: JobIdentity, name: string): number | null {
  const text = readCgroupFile(identity, name);
  if (text === null) return null;
  const value = Number(text.trim());
  return Number.isFinite(value) && value >= 0 ? value : null;
}

/** `usage_usec` of a cgroup's cpu.stat, in seconds; null when absent. */
function readCgroupCpu(identity: JobIdentity): number | null {
  const text = readCgroupFile(identity, 'cpu.stat');
  if (text === null) return null;
  const match = /^usage_usec (\d+)$/m.exec(text);
  return match ? Number(match[1]) / 1e6 : null;
}

/** /proc/PID/`name` of a member: through the job's kept descriptors where it has them (platform/kept-files.ts). */
function readMemberFile(identity: JobIdentity, pid: number, name: 'statm' | 'stat'): string | null {
  if (identity.memberFiles) return identity.memberFiles.read(pid, name, buffer);
  return readSmall(`/proc/${pid}/${name}`);
}

/** Resident bytes of one process (statm's second field, in pages); null when gone. */
function residentBytes(identity: JobIdentity, pid: number): number | null {
  const text = readMemberFile(identity, pid, 'statm');
  if (text === null) return null;
  const pages = Number(text.split(' ')[1]);
  return Number.isFinite(pages) ? pages * pageSize() : null;
}

/**
 * CPU seconds of one process: its own user and system time (all its threads), plus cutime and
 * cstime, the times of the children it has waited for. Those children are no longer live members,
 * so nothing is counted twice, and a build step that `npm run` started and waited for still
 * counts. What this misses: processes that have exited and were reaped by something that is not
 * a live member (an orphan reaped by the supervisor, a member that exited itself, and what it had
 * reaped), and zombies not yet reaped. Only the cgroup's cpu.stat counts those.
 */
function cpuSecondsOf(identity: JobIdentity, pid: number): number | null {
  const text = readMemberFile(identity, pid, 'stat');
  if (text === null) return null;
  // The command name (field 2) may contain spaces and parentheses: count fields after the last ')'.
  // Fields from there: state(3) ... utime(14) stime(15) cutime(16) cstime(17).
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  return Number.isFinite(ticks) ? ticks / USER_HZ : null;
}

/** The sum of a per-process reading over the members that could be read; null when none could. */
function sumOver(pids: readonly number[], reading: (pid: number) => number | null): number | null {
  let sum = 0;
  let read = 0;
  for (const pid of pids) {
    const value = reading(pid);
    if (value === null) continue;
    sum += value;
    read++;
  }
  return read > 0 ? sum : null;
}

/** The job's memory: its cgroup's memory.current where it has one, else its members' summed RSS. */
export function jobMemoryBytes(identity: JobIdentity, members: readonly number[]): number | null {
  return readCgroupNumber(identity, 'memory.current') ?? sumOver(members, (pid) => residentBytes(identity, pid));
}

/**
 * Usage of one job. `members` may be passed when the caller has just listed them (the /proc scan
 * of the process-group mode is the expensive part of this); otherwise they are asked for once.
 */
export function jobStats(
  strategy: Pick<ContainmentStrategy, 'members'>,
  identity: JobIdentity,
  members: readonly number[] = strategy.members(identity),
): JobStats {
  identity.memberFiles?.keepOnly(members);
  const memoryBytes = jobMemoryBytes(identity, members);
  const cpuSeconds = readCgroupCpu(identity) ?? sumOver(members, (pid) => cpuSecondsOf(identity, pid));

  return { procs: members.length, memoryBytes, cpuSeconds, ports: uniquePorts(listeningPorts(members)) };
}
