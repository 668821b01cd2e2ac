/**
 * Kernel truth from /proc, for the kill and crash figures: which processes carry a marker in
 * their environment, and whether a process we saw is dead (a zombie or gone) or reaped (gone, or
 * its pid reused by another process). Never kill(pid, 0): it succeeds on zombies.
 */
import fs from 'node:fs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export { sleep };

/** Field 3 (state) and field 22 (start time) of /proc/PID/stat, or null when gone. */
export function statOf(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0], start: fields[19] };
}

function pids() {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    const code = name.charCodeAt(0);
    if (code >= 48 && code <= 57) out.push(Number(name));
  }
  return out;
}

/**
 * Live (non-zombie) processes whose environment holds exactly `entry` (`KEY=value`), or with
 * `prefix`, an entry that starts with it.
 */
export function withMarker(entry, { prefix = false } = {}) {
  const needle = Buffer.from(prefix ? entry : `${entry}\0`);
  const found = [];
  for (const pid of pids()) {
    if (pid === process.pid) continue;
    let environ;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue;
    }
    // Match at the start or after a NUL, so `A=1` does not match `XA=1`.
    let at = environ.indexOf(needle);
    while (at > 0 && environ[at - 1] !== 0) at = environ.indexOf(needle, at + 1);
    if (at >= 0) {
      const stat = statOf(pid);
      if (stat && stat.state !== 'Z' && stat.state !== 'X') found.push(pid);
    }
  }
  return found;
}

/** Identifies processes by pid and start time, so a recycled pid is not mistaken for ours. */
export function snapshot(pidList) {
  const seen = [];
  for (const pid of pidList) {
    const stat = statOf(pid);
    if (stat) seen.push({ pid, start: stat.start });
  }
  return seen;
}

/** Gone from /proc (reaped), or the pid now names another process. */
export function isReaped(seen) {
  const stat = statOf(seen.pid);
  return stat === null || stat.start !== seen.start;
}

/** Exited: a zombie, or reaped. */
export function isDead(seen) {
  const stat = statOf(seen.pid);
  return stat === null || stat.start !== seen.start || stat.state === 'Z' || stat.state === 'X';
}

/** Polls until `check()` is true; rejects after `timeoutMs` naming `what`. */
export async function waitUntil(check, what, timeoutMs = 20_000, intervalMs = 2) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Waits until exactly `count` live processes carry the marker; returns them. */
export async function waitForMarked(entry, count, timeoutMs = 20_000) {
  let found = [];
  await waitUntil(() => (found = withMarker(entry)).length >= count, `${count} processes with ${entry} (saw ${found.length})`, timeoutMs, 5);
  return found;
}

/** SIGKILLs each pid we saw, if it is still that process. Survivors of an alternative end here. */
export function killSeen(seenList) {
  for (const seen of seenList) {
    if (isDead(seen)) continue;
    try {
      process.kill(seen.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/** SIGKILLs every live process with the marker until none is left (escapers included). */
export async function killMarked(entry, timeoutMs = 10_000, options = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = withMarker(entry, options);
    if (left.length === 0) return;
    if (Date.now() > deadline) throw new Error(`could not kill ${left.length} processes with ${entry}: ${left.join(' ')}`);
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await sleep(5);
  }
}

/** VmRSS and VmHWM of a process, in bytes. */
export function memoryOf(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
  const field = (name) => Number(/^(\w+):\s+(\d+) kB$/m.exec(text.split('\n').find((line) => line.startsWith(`${name}:`)) ?? '')?.[2] ?? NaN) * 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}
