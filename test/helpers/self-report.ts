/**
 * What a job leader sees of itself, printed by the leader and parsed here: its signal mask and
 * ignored signals, its descriptors, its process group, session and parent, its cgroup v2 path.
 */

/** A field of a /proc status file ("SigBlk", "SigIgn") as a bit mask. */
export const statusMask = (text: string, key: string) => BigInt(`0x${new RegExp(`^${key}:\\s*([0-9a-f]+)$`, 'm').exec(text)?.[1] ?? 'missing'}`);

/**
 * What the leader sees of itself, from builtins where it matters: an external command could catch
 * the shell mid-vfork, when dash briefly blocks every signal. Sections: status lines, fds, stat.
 */
export const SELF_REPORT = [
  'while read -r key value; do case $key in SigBlk:|SigIgn:) echo "$key $value";; esac; done < /proc/$$/status',
  'echo ---',
  'ls /proc/$$/fd',
  'echo ---',
  'read -r stat < /proc/$$/stat; echo "$stat"',
  'echo ---',
  'while read -r line; do case $line in 0::*) echo "$line";; esac; done < /proc/$$/cgroup',
].join('; ');

export interface SelfReport {
  sigBlk: bigint;
  sigIgn: bigint;
  fds: number[];
  pid: number;
  pgrp: number;
  session: number;
  ppid: number;
  cgroup: string;
}

export function parseSelfReport(output: string): SelfReport {
  const [status, fds, stat, cgroup] = output.split('---\n');
  // "pid (comm) state ppid pgrp session ...": comm may hold spaces, so split after its ')'.
  const afterComm = stat!.slice(stat!.lastIndexOf(')') + 2).split(' ');
  return {
    sigBlk: statusMask(status!, 'SigBlk'),
    sigIgn: statusMask(status!, 'SigIgn'),
    fds: fds!.split('\n').filter(Boolean).map(Number),
    pid: Number(stat!.split(' ')[0]),
    ppid: Number(afterComm[1]),
    pgrp: Number(afterComm[2]),
    session: Number(afterComm[3]),
    cgroup: cgroup!.trim(),
  };
}
