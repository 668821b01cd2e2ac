/**
 * Timing a kill that does not itself wait for death (tree-kill, execa's kill): polls the processes
 * we saw until every one is dead, or until none has died for SETTLE_MS after the call returned.
 * The time is the last death observed (or the call's return, if later); what is still alive then
 * is a survivor. Survivors are then killed by pid, so nothing leaks.
 */
import { isDead, killSeen, sleep, waitUntil } from './procs.mjs';
import { now } from './stats.mjs';

const SETTLE_MS = 300;
/** A call that has not returned by then counts as returned (and what lives on as survivors). */
const CALL_DEADLINE_MS = 10_000;

export async function timeDeaths(seen, start, apiDone) {
  let apiAt = null;
  apiDone.then(
    () => (apiAt = now()),
    () => (apiAt = now()),
  );
  let alive = seen.length;
  let lastDeath = start;
  for (;;) {
    const count = seen.filter((entry) => !isDead(entry)).length;
    const t = now();
    if (count < alive) {
      alive = count;
      lastDeath = t;
    }
    if (apiAt === null && t - start > CALL_DEADLINE_MS) apiAt = t;
    if (apiAt !== null && (alive === 0 || t - Math.max(lastDeath, apiAt) > SETTLE_MS)) break;
    await sleep(1);
  }
  const end = Math.max(lastDeath, apiAt);
  const survivors = alive;
  killSeen(seen);
  await waitUntil(() => seen.every(isDead), 'survivors killed', 10_000);
  return { ms: end - start, survivors };
}
