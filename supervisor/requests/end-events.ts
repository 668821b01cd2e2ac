/**
 * A job's end as events: 'exited' once its leader's exit is known, 'cleaned-up' once all of it is
 * gone. For most short jobs both are ready in one event-loop turn (the pipes were at end of file
 * before the reap was handled, and nothing was left to stop), so the exit is held to the end of
 * its turn, and a cleanup meanwhile carries it: one event to encode, write and decode instead of
 * two (bench: throughput). The hold ends on process.nextTick, before this turn's promise
 * reactions, so the exit still leaves ahead of any reply sent in the same turn (a waiting read's
 * answer carries the exit too: the runtime takes whichever comes first).
 */
import type { LeaderExit, SupervisorEvent } from '../../src/protocol/messages.js';
import type { LimitFacts } from '../../src/protocol/limits.js';

export interface EndEvents {
  exited(job: number, exit: LeaderExit): void;
  cleanedUp(job: number, limits: LimitFacts | null, lines: number): void;
}

export function endEvents(send: (event: SupervisorEvent) => void): EndEvents {
  const held = new Map<number, LeaderExit>();
  const release = (): void => {
    for (const [job, exit] of held) send({ event: 'exited', job, ...exit });
    held.clear();
  };
  return {
    exited(job, exit) {
      if (held.size === 0) process.nextTick(release);
      held.set(job, exit);
    },
    cleanedUp(job, limits, lines) {
      const exit = held.get(job);
      held.delete(job);
      send({ event: 'cleaned-up', job, at: Date.now(), lines, ...(exit ? { exit } : {}), ...(limits ? { limits } : {}) });
    },
  };
}
