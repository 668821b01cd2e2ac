/**
 * Where a job's leader is spawned: inline, on this thread, which sleeps in the native spawn until
 * the child has exec'd; or on one of the addon's spawner threads while this thread goes on, the
 * result coming back as a callback ahead of the reaper's report of that child.
 *
 * Under a stream of spawns the exec'ing children wait for a CPU behind the jobs already running,
 * and an inline spawn holds this thread for all of that wait. On the threads, spawns overlap one
 * another and this thread's reaps, cleanups and requests. A lone spawn stays inline: the two
 * hand-offs between threads would only add to its latency. `auto` tells the two apart by the time
 * since the previous spawn (README, Benchmarks: Throughput).
 */
import { native, type NativeSpawnOptions, type NativeSpawnResult } from '../native.js';
import type { SpawnPlacement } from '../../src/protocol/messages.js';

/** A spawn this soon after the previous one, or while one is on a spawner thread, goes to the threads (`auto`). */
export const OVERLAP_WINDOW_MS = 5;

let lastSpawnAt = Number.NEGATIVE_INFINITY;
/** Spawns on the spawner threads now, and so far. */
let onThreads = 0;
let threadSpawns = 0;

export type SpawnDone = (error: Error | null, spawned?: NativeSpawnResult) => void;

/**
 * Spawns with `options` where `placement` says and calls `done` once, with the error or the
 * result: synchronously when inline. `done` runs before the reaper's report of the child can
 * (a spawn thread's result comes through the reaper's own queue, ahead of the child's reap), so
 * what must be in place for that report (the job, registered) is to be done in `done` itself, not
 * after an await.
 */
export function spawnLeader(options: NativeSpawnOptions, placement: SpawnPlacement, done: SpawnDone): void {
  const now = performance.now();
  const threads = placement === 'threads' || (placement === 'auto' && (onThreads > 0 || now - lastSpawnAt < OVERLAP_WINDOW_MS));
  lastSpawnAt = now;
  if (!threads) {
    let spawned: NativeSpawnResult;
    try {
      spawned = native.spawn(options);
    } catch (error) {
      done(error as Error);
      return;
    }
    done(null, spawned);
    return;
  }
  try {
    native.spawnAsync(options, (error, spawned) => {
      onThreads--;
      done(error, spawned);
    });
  } catch (error) {
    done(error as Error);
    return;
  }
  onThreads++;
  threadSpawns++;
}

/** Spawns so far on the spawner threads (diagnostics: tests see which path ran). */
export function spawnsOnThreads(): number {
  return threadSpawns;
}
