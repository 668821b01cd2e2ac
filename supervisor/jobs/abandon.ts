/**
 * A leader whose job never came to be: it was spawned, then a setup step failed (an fs.watch that
 * meets inotify's watch limit, say). Nothing may be left of it: every process is killed and reaped,
 * its cgroup removed, its pidfd closed (the caller closes the pipes). The reaper reports the
 * leader's end by its spawn token, which no registered job has; `leaderGone` routes it here.
 */
import { constants as os } from 'node:os';
import type { ContainmentStrategy, JobIdentity } from '../containment/index.js';
import { native } from '../native.js';
import { hasUnreapedChildren } from './zombies.js';
import { setTimeout as sleep } from 'node:timers/promises';

const SIGKILL = os.signals.SIGKILL;
/** Longest an abandoned leader is waited for (its reap, its cgroup's removal) before giving up. */
const ABANDON_DEADLINE_MS = 10_000;
/** Pause between looks at what is left (the reap of what was killed takes a moment). */
const ABANDON_PAUSE_MS = 5;

/** Reaps the reaper reported for tokens no registered job has, by token. */
const waiting = new Map<number, () => void>();

/** The reaper reaped a leader with `token` that no registered job has. */
export function leaderGone(token: number): void {
  waiting.get(token)?.();
  waiting.delete(token);
}

/**
 * Kills every process of the job, waits for the leader's reap and for the job to be empty, removes
 * its cgroup and closes the leader's pidfd. Must be called in the same turn as the spawn (before
 * any await), so the reaper's report of the leader cannot come before we listen for it.
 */
export async function stopAbandoned(token: number, identity: JobIdentity, strategy: ContainmentStrategy, pidfd: number): Promise<void> {
  const deadline = Date.now() + ABANDON_DEADLINE_MS;
  const reaped = new Promise<void>((resolve) => waiting.set(token, resolve));
  try {
    native.pidfdSendSignal(pidfd, SIGKILL);
    strategy.killAll(identity);
    await Promise.race([reaped, pause(ABANDON_DEADLINE_MS)]);
    identity.leaderReaped = true;
    identity.pidfd = -1;
    while (Date.now() < deadline) {
      // Its orphans are reparented to us and left as zombies until our reaper gets to them.
      if (strategy.isEmpty(identity) && !hasUnreapedChildren() && strategy.release(identity)) return;
      strategy.killAll(identity);
      await pause(ABANDON_PAUSE_MS);
    }
  } finally {
    waiting.delete(token);
    native.closeFd(pidfd);
  }
}

function pause(ms: number): Promise<void> {
  return sleep(ms, undefined, { ref: false });
}
