import { describe, expect, it, vi } from 'vitest';
import { HephError } from '../../src/protocol/errors.js';
import {
  LockTable,
  normalizeResources,
  overlaps,
  type Lease,
  type LockBackend,
  type LockBackendHandle,
  type LockOwner,
  type LockTableSnapshot,
  type NormalizedResource,
  type ResourceSpec,
} from '../../src/locks/index.js';
import { prng } from '../helpers/random.js';

const owner = (label: string, extra: Record<string, unknown> = {}): LockOwner => ({ label, ...extra });

/** One macrotask turn: every promise reaction queued so far has run. Not a sleep. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Tracks a promise's outcome so a test can assert "not settled yet". */
function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean; value: () => T | undefined } {
  let done = false;
  let value: T | undefined;
  promise.then(
    (v) => {
      done = true;
      value = v;
    },
    () => {
      done = true;
    },
  );
  return { promise, settled: () => done, value: () => value };
}

async function rejection(promise: Promise<unknown>): Promise<HephError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(HephError);
    return error as HephError;
  }
  throw new Error('expected a rejection, the promise resolved');
}

function thrown(fn: () => unknown): HephError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HephError);
    return error as HephError;
  }
  throw new Error('expected an error, nothing was thrown');
}

const labels = (snap: LockTableSnapshot): { holders: string[]; waiters: string[] } => ({
  holders: snap.holders.map((h) => h.owner.label),
  waiters: snap.waiters.map((w) => w.owner.label),
});

describe('LockTable basics', () => {
  it('grants an uncontended request at once and releases it', async () => {
    const table = new LockTable();
    const lease = await table.acquire(owner('dev', { kind: 'job', jobId: 0 }), ['port:5173', 'worktree:main']);
    expect(lease.owner.label).toBe('dev');
    expect(lease.resources.map((r) => r.resource)).toEqual(['port:5173', 'worktree:main']);
    const snap = table.snapshot();
    expect(snap.holders).toHaveLength(1);
    expect(snap.holders[0]).toMatchObject({ id: lease.id, pending: false, owner: { label: 'dev', jobId: 0 } });
    expect(snap.waiters).toEqual([]);
    lease.release();
    expect(lease.released).toBe(true);
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('release is idempotent: a second release does not free a later holder', async () => {
    const table = new LockTable();
    const first = await table.acquire(owner('a'), ['port:1']);
    first.release();
    const second = await table.acquire(owner('b'), ['port:1']);
    first.release(); // no-op
    expect(table.snapshot().holders.map((h) => h.id)).toEqual([second.id]);
    expect(() => table.tryAcquire(owner('c'), ['port:1'])).toThrow(/held by "b"/);
    second.release();
  });

  it('merges duplicate resources within one request (exclusive wins)', async () => {
    const table = new LockTable();
    const lease = await table.acquire(owner('a'), [{ resource: 'port:1', mode: 'shared' }, 'port:1', 'path:/x/', 'path:/x']);
    expect(lease.resources.map((r) => `${r.resource}/${r.mode}`)).toEqual(['path:/x/exclusive', 'port:1/exclusive']);
    // port:1 is held exclusively, so even a shared request must wait.
    expect(thrown(() => table.tryAcquire(owner('b'), [{ resource: 'port:1', mode: 'shared' }])).code).toBe('ERR_LOCK_BUSY');
    lease.release();
  });

  it('rejects bad resources, owners and options with clear errors, holding nothing', async () => {
    const table = new LockTable();
    const bad = await rejection(table.acquire(owner('a'), ['Port:1']));
    expect(bad.code).toBe('ERR_BAD_RESOURCE');
    expect(bad.message).toContain('"Port:1"');
    expect(thrown(() => table.tryAcquire(owner('a'), ['path:relative'])).code).toBe('ERR_BAD_RESOURCE');

    const noLabel = await rejection(table.acquire({} as LockOwner, ['port:1']));
    expect(noLabel.code).toBe('ERR_INVALID_INPUT');
    expect(noLabel.message).toContain('"label"');

    const negative = await rejection(table.acquire(owner('a'), ['port:1'], { timeoutMs: -1 }));
    expect(negative.code).toBe('ERR_INVALID_INPUT');
    expect(negative.message).toContain('"timeoutMs"');
    expect(negative.message).toContain('received -1');
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });
});

describe('fairness', () => {
  it('serves three waiters in arrival order', async () => {
    const table = new LockTable();
    const holder = await table.acquire(owner('holder'), ['worktree:main']);
    const order: string[] = [];
    const waiters = ['w1', 'w2', 'w3'].map((label) =>
      table.acquire(owner(label), ['worktree:main']).then((lease) => {
        order.push(label);
        return lease;
      }),
    );
    await flush();
    expect(order).toEqual([]);
    expect(labels(table.snapshot())).toEqual({ holders: ['holder'], waiters: ['w1', 'w2', 'w3'] });

    holder.release();
    const l1 = await waiters[0]!;
    await flush();
    expect(order).toEqual(['w1']);
    expect(labels(table.snapshot())).toEqual({ holders: ['w1'], waiters: ['w2', 'w3'] });

    l1.release();
    const l2 = await waiters[1]!;
    await flush();
    expect(order).toEqual(['w1', 'w2']);
    l2.release();
    (await waiters[2]!).release();
    expect(order).toEqual(['w1', 'w2', 'w3']);
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('a later request never overtakes an earlier one it conflicts with', async () => {
    const table = new LockTable();
    const holder = await table.acquire(owner('holder'), ['r:a']);
    const first = track(table.acquire(owner('first'), ['r:a', 'r:b']));
    // r:b is free, but `first` waits for it (and for r:a): `second` must queue behind it.
    const second = track(table.acquire(owner('second'), ['r:b']));
    await flush();
    expect(first.settled()).toBe(false);
    expect(second.settled()).toBe(false);

    const snap = table.snapshot();
    expect(labels(snap).waiters).toEqual(['first', 'second']);
    const secondInfo = snap.waiters[1]!;
    expect(secondInfo.blockedBy).toHaveLength(1);
    expect(secondInfo.blockedBy[0]).toMatchObject({ holding: false, owner: { label: 'first' } });
    expect(secondInfo.blockedBy[0]!.resource.resource).toBe('r:b');

    // tryAcquire respects fairness too, and says who is in the way.
    const busy = thrown(() => table.tryAcquire(owner('sneaky'), ['r:b']));
    expect(busy.code).toBe('ERR_LOCK_BUSY');
    expect(busy.message).toContain('r:b is wanted first by "first"');

    holder.release();
    const firstLease = await first.promise;
    await flush();
    expect(second.settled()).toBe(false);
    expect(table.snapshot().waiters[0]!.blockedBy[0]).toMatchObject({ holding: true, owner: { label: 'first' } });
    firstLease.release();
    (await second.promise).release();
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('grants at once a later request that conflicts with no holder and no earlier waiter', async () => {
    const table = new LockTable();
    const holder = await table.acquire(owner('holder'), ['r:a']);
    const waiting = track(table.acquire(owner('waiting'), ['r:a', 'r:b']));
    const free = await table.acquire(owner('free'), ['r:c']); // resolves although someone waits
    const alsoFree = table.tryAcquire(owner('also-free'), ['r:d']);
    await flush();
    expect(waiting.settled()).toBe(false);
    expect(labels(table.snapshot())).toEqual({ holders: ['holder', 'free', 'also-free'], waiters: ['waiting'] });
    free.release();
    alsoFree.release();
    holder.release();
    (await waiting.promise).release();
  });

  it('an exclusive waiter is not starved by a stream of shared requests', async () => {
    const table = new LockTable();
    const shared1 = await table.acquire(owner('s1'), [{ resource: 'path:/repo', mode: 'shared' }]);
    const shared2 = await table.acquire(owner('s2'), [{ resource: 'path:/repo/src', mode: 'shared' }]);
    const writer = track(table.acquire(owner('writer'), ['path:/repo/src/x']));
    // Shared vs shared would be fine, but the writer arrived first and conflicts with it.
    const shared3 = track(table.acquire(owner('s3'), [{ resource: 'path:/repo', mode: 'shared' }]));
    // Shared on an unrelated path is granted at once.
    const other = await table.acquire(owner('other'), [{ resource: 'path:/elsewhere', mode: 'shared' }]);
    await flush();
    expect(writer.settled()).toBe(false);
    expect(shared3.settled()).toBe(false);

    shared1.release();
    await flush();
    expect(writer.settled()).toBe(false); // s2 still covers /repo/src
    shared2.release();
    const w = await writer.promise;
    await flush();
    expect(shared3.settled()).toBe(false);
    w.release();
    (await shared3.promise).release();
    other.release();
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });
});

describe('shared and path nesting in the table', () => {
  it('two shared holds coexist; an exclusive one waits for both', async () => {
    const table = new LockTable();
    const a = await table.acquire(owner('a'), [{ resource: 'worktree:main', mode: 'shared' }]);
    const b = await table.acquire(owner('b'), [{ resource: 'worktree:main', mode: 'shared' }]);
    const busy = thrown(() => table.tryAcquire(owner('c'), ['worktree:main']));
    expect(busy.message).toContain('worktree:main is held by "a"');
    expect(busy.message).toContain('worktree:main is held by "b"');
    a.release();
    expect(() => table.tryAcquire(owner('c'), ['worktree:main'])).toThrow(/held by "b"/);
    b.release();
    table.tryAcquire(owner('c'), ['worktree:main']).release();
  });

  it('a directory covers everything below it, not a sibling with the same prefix', async () => {
    const table = new LockTable();
    const a = await table.acquire(owner('a'), ['path:/a']);
    expect(thrown(() => table.tryAcquire(owner('x'), ['path:/a/b/c'])).message).toContain(
      'path:/a/b/c (through path:/a) is held by "a"',
    );
    expect(() => table.tryAcquire(owner('x'), ['path:/'])).toThrow(/held by "a"/);
    expect(() => table.tryAcquire(owner('x'), ['path:/a/'])).toThrow(/held by "a"/);
    const ab = table.tryAcquire(owner('ab'), ['path:/ab']);
    const deep = table.tryAcquire(owner('deep'), ['path:/x/y/z']);
    expect(() => table.tryAcquire(owner('x'), ['path:/x'])).toThrow(/held by "deep"/);
    expect(() => table.tryAcquire(owner('x'), ['path:/x/y'])).toThrow(/held by "deep"/);
    table.tryAcquire(owner('x'), ['path:/x/yy', 'path:/x/y/zz']).release();
    a.release();
    table.tryAcquire(owner('x'), ['path:/a/b/c']).release();
    ab.release();
    deep.release();
    table.tryAcquire(owner('root'), ['path:/']).release();
  });
});

describe('cancel and timeout', () => {
  it('cancel removes the request, rejects with ERR_LOCK_CANCELLED, and wakes those behind it', async () => {
    const table = new LockTable();
    const holder = await table.acquire(owner('holder'), ['r:a']);
    const controller = new AbortController();
    const cancelled = table.acquire(owner('cancelled'), ['r:a', 'r:b'], { signal: controller.signal });
    const behind = track(table.acquire(owner('behind'), ['r:b']));
    await flush();
    expect(behind.settled()).toBe(false);

    const reason = new Error('user pressed ctrl-c');
    controller.abort(reason);
    const error = await rejection(cancelled);
    expect(error.code).toBe('ERR_LOCK_CANCELLED');
    expect(error.cause).toBe(reason);
    expect(error.message).toContain('r:a, r:b');
    expect(error.message).toContain('"cancelled"');
    expect(error.message).toContain('r:a is held by "holder"');

    const behindLease = await behind.promise; // only `cancelled` stood in its way
    expect(labels(table.snapshot())).toEqual({ holders: ['holder', 'behind'], waiters: [] });
    behindLease.release();
    holder.release();
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('an already aborted signal rejects without touching the table', async () => {
    const table = new LockTable();
    const error = await rejection(table.acquire(owner('a'), ['r:a'], { signal: AbortSignal.abort() }));
    expect(error.code).toBe('ERR_LOCK_CANCELLED');
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('aborting after the grant does nothing', async () => {
    const table = new LockTable();
    const controller = new AbortController();
    const lease = await table.acquire(owner('a'), ['r:a'], { signal: controller.signal, timeoutMs: 1 });
    controller.abort();
    expect(table.snapshot().holders).toHaveLength(1);
    lease.release();
  });

  it('timeout names the resources and who holds them, and leaves the table clean', async () => {
    vi.useFakeTimers();
    try {
      const table = new LockTable();
      const holder = await table.acquire(owner('npm run dev', { kind: 'job', jobId: 3 }), ['port:5173']);
      const timedOut = table.acquire(owner('shell: git push', { kind: 'host' }), ['port:5173', 'worktree:main'], {
        timeoutMs: 250,
      });
      const behind = track(table.acquire(owner('behind'), ['worktree:main']));
      const failed = rejection(timedOut);
      await vi.advanceTimersByTimeAsync(249);
      expect(table.snapshot().waiters).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(1);
      const error = await failed;
      expect(error.code).toBe('ERR_LOCK_TIMEOUT');
      expect(error.message).toContain('timed out after 250 ms waiting for port:5173, worktree:main');
      expect(error.message).toContain('"shell: git push" (kind=host)');
      expect(error.message).toContain('port:5173 is held by "npm run dev" (kind=job, jobId=3)');
      expect(error.message).toContain('/job-kill 3');
      expect(error.details['blockers']).toEqual([
        { id: holder.id, owner: { label: 'npm run dev', kind: 'job', jobId: 3 }, holding: true, resource: 'port:5173', mode: 'exclusive', wants: 'port:5173' },
      ]);
      (await behind.promise).release();
      holder.release();
      expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
    } finally {
      vi.useRealTimers();
    }
  });

  it('a real short timeout rejects (awaited, not slept on)', async () => {
    const table = new LockTable();
    const holder = await table.acquire(owner('holder'), ['r:a']);
    const error = await rejection(table.acquire(owner('late'), ['r:a'], { timeoutMs: 5 }));
    expect(error.code).toBe('ERR_LOCK_TIMEOUT');
    holder.release();
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('wait: false fails at once with ERR_LOCK_BUSY', async () => {
    const table = new LockTable();
    const holder = await table.acquire(owner('holder'), ['r:a']);
    const error = await rejection(table.acquire(owner('x'), ['r:a'], { wait: false }));
    expect(error.code).toBe('ERR_LOCK_BUSY');
    expect(table.snapshot().waiters).toEqual([]);
    holder.release();
    (await table.acquire(owner('x'), ['r:a'], { wait: false })).release();
  });
});


/** Checks the table against an independent model built from `overlaps`. */
function checkInvariants(snap: LockTableSnapshot, requested: Map<number, NormalizedResource[]>, context: string): void {
  const holderIds = new Set(snap.holders.map((h) => h.id));
  for (const w of snap.waiters) {
    // A waiting request holds nothing.
    expect(holderIds.has(w.id), `${context}: waiter ${w.id} also holds`).toBe(false);
  }
  for (const h of snap.holders) {
    // All or nothing: a holder holds its whole set.
    expect(h.resources, `${context}: holder ${h.id} holds a partial set`).toEqual(requested.get(h.id));
  }
  for (let i = 0; i < snap.holders.length; i++) {
    for (let j = i + 1; j < snap.holders.length; j++) {
      const x = snap.holders[i]!;
      const y = snap.holders[j]!;
      expect(overlaps(x.resources, y.resources), `${context}: holders ${x.id} and ${y.id} conflict`).toEqual([]);
    }
  }
  for (const [index, w] of snap.waiters.entries()) {
    const blockers = [
      ...snap.holders.filter((h) => overlaps(w.resources, h.resources).length > 0),
      ...snap.waiters.slice(0, index).filter((e) => overlaps(w.resources, e.resources).length > 0),
    ];
    // Progress: nobody waits who could be granted.
    expect(blockers.length, `${context}: waiter ${w.id} waits for nothing`).toBeGreaterThan(0);
    expect(w.blockedBy.length).toBeGreaterThan(0);
    // Fairness: no holder that arrived later conflicts with this waiter.
    for (const h of snap.holders) {
      if (h.id > w.id) expect(overlaps(w.resources, h.resources), `${context}: ${h.id} overtook ${w.id}`).toEqual([]);
    }
  }
}

interface InterleavingStats {
  grants: number;
  cancels: number;
  maxWaiting: number;
}

/**
 * Random interleavings of acquire / release / cancel over `sets`, seeded so a failure can be
 * replayed; after every step the table is checked against the independent model above, and at
 * the end every request must have settled and the table must be empty.
 */
async function runInterleavings(sets: string[][], iterations: number, seedBase: number): Promise<InterleavingStats> {
  const stats: InterleavingStats = { grants: 0, cancels: 0, maxWaiting: 0 };
  for (let iteration = 0; iteration < iterations; iteration++) {
    const seed = seedBase + iteration;
    const random = prng(seed);
    const table = new LockTable();
    const requested = new Map<number, NormalizedResource[]>();
    const leases: Lease[] = [];
    const controllers = new Map<number, AbortController>();
    const unsettled = new Set<Promise<unknown>>();
    const actors = 4 + Math.floor(random() * 6);
    let started = 0;
    let finished = false;
    for (let step = 0; step < 1000 && !finished; step++) {
      const context = `seed ${seed} step ${step}`;
      const roll = random();
      if (started < actors && (roll < 0.5 || leases.length === 0)) {
        const spec: ResourceSpec[] = sets[Math.floor(random() * sets.length)]!.map((resource) =>
          random() < 0.25 ? { resource, mode: 'shared' } : resource,
        );
        const controller = new AbortController();
        const promise = table.acquire(owner(`actor ${started}`), spec, { signal: controller.signal });
        started++;
        // The new request is the newest entry of the table, holding or waiting.
        const snap = table.snapshot();
        const id = Math.max(...[...snap.holders, ...snap.waiters].map((e) => e.id));
        requested.set(id, normalizeResources(spec));
        controllers.set(id, controller);
        const settled = promise.then(
          (lease) => {
            stats.grants++;
            leases.push(lease);
          },
          (error: HephError) => {
            expect(error.code).toBe('ERR_LOCK_CANCELLED');
            stats.cancels++;
          },
        );
        unsettled.add(settled);
        void settled.finally(() => unsettled.delete(settled));
      } else if (leases.length > 0 && roll < 0.93) {
        const [lease] = leases.splice(Math.floor(random() * leases.length), 1);
        lease!.release();
      } else {
        const waiters = table.snapshot().waiters;
        if (waiters.length > 0) controllers.get(waiters[Math.floor(random() * waiters.length)]!.id)!.abort();
      }
      await flush();
      const snap = table.snapshot();
      stats.maxWaiting = Math.max(stats.maxWaiting, snap.waiters.length);
      checkInvariants(snap, requested, context);
      // Every local grant has reached its caller.
      expect(new Set(leases.map((l) => l.id)), context).toEqual(new Set(snap.holders.map((h) => h.id)));
      if (started === actors && snap.holders.length === 0) {
        // Nothing held: if anyone still waited, that would be a deadlock.
        expect(snap.waiters, `${context}: deadlock`).toEqual([]);
        finished = true;
      }
    }
    expect(finished, `seed ${seed}: did not finish`).toBe(true);
    expect(unsettled.size, `seed ${seed}: requests never settled`).toBe(0);
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  }
  return stats;
}

describe('all-or-nothing under random interleavings', () => {
  it('{a,b}, {b,c}, {c,a} never deadlock and never hold partially', async () => {
    const iterations = 300;
    const stats = await runInterleavings(
      [
        ['r:a', 'r:b'],
        ['r:b', 'r:c'],
        ['r:c', 'r:a'],
      ],
      iterations,
      1000,
    );
    // The loop really exercised contention and cancellation.
    expect(stats.grants).toBeGreaterThan(iterations * 3);
    expect(stats.cancels).toBeGreaterThan(0);
    expect(stats.maxWaiting).toBeGreaterThanOrEqual(3);
  });

  it('the same cycle through nested paths (ancestors and descendants) never deadlocks either', async () => {
    const iterations = 200;
    const stats = await runInterleavings(
      [
        ['path:/a', 'path:/b/x'],
        ['path:/b', 'path:/c/x/y'],
        ['path:/c/x', 'path:/a/z'],
        ['path:/ab', 'path:/b/xy'],
      ],
      iterations,
      5000,
    );
    expect(stats.grants).toBeGreaterThan(iterations * 3);
    expect(stats.maxWaiting).toBeGreaterThanOrEqual(3);
  });
});

class FakeBackend implements LockBackend {
  readonly calls: {
    resources: readonly NormalizedResource[];
    owner: LockOwner;
    signal: AbortSignal;
    grant: (handle?: LockBackendHandle) => void;
    fail: (error: unknown) => void;
  }[] = [];
  readonly events: string[] = [];

  acquire(resources: readonly NormalizedResource[], owner: LockOwner, signal: AbortSignal): Promise<LockBackendHandle> {
    this.events.push(`acquire ${owner.label}`);
    return new Promise((resolve, reject) => {
      this.calls.push({
        resources,
        owner,
        signal,
        grant: (handle) =>
          resolve(handle ?? { release: () => void this.events.push(`release ${owner.label}`) }),
        fail: reject,
      });
    });
  }

  call(index: number): FakeBackend['calls'][number] {
    const call = this.calls[index];
    if (call === undefined) throw new Error(`backend call ${index} not made; calls: ${this.events.join(', ')}`);
    return call;
  }
}

describe('backend seam', () => {
  it('returns the lease only after the backend grants, holding locally meanwhile', async () => {
    const backend = new FakeBackend();
    const table = new LockTable({ backend });
    const first = track(table.acquire(owner('first'), ['port:1', 'path:/repo/']));
    await flush();
    expect(first.settled()).toBe(false);
    expect(backend.calls).toHaveLength(1);
    expect(backend.call(0).resources.map((r) => r.resource)).toEqual(['path:/repo', 'port:1']);
    expect(table.snapshot().holders).toMatchObject([{ owner: { label: 'first' }, pending: true }]);

    // Held locally: a conflicting request waits in the table and is not sent to the backend.
    const second = track(table.acquire(owner('second'), ['port:1']));
    await flush();
    expect(backend.calls).toHaveLength(1);

    backend.call(0).grant();
    const lease = await first.promise;
    expect(table.snapshot().holders).toMatchObject([{ owner: { label: 'first' }, pending: false }]);

    // Release: the backend's release goes out before the next backend acquire.
    lease.release();
    await flush();
    expect(backend.events).toEqual(['acquire first', 'release first', 'acquire second']);
    backend.call(1).grant();
    (await second.promise).release();
    expect(backend.events.at(-1)).toBe('release second');
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('a backend failure releases locally, rejects with the backend error and wakes waiters', async () => {
    const backend = new FakeBackend();
    const table = new LockTable({ backend });
    const first = table.acquire(owner('first'), ['port:1']);
    const second = track(table.acquire(owner('second'), ['port:1']));
    await flush();
    const failure = new Error('F_OFD_SETLKW: EDEADLK');
    backend.call(0).fail(failure);
    await expect(first).rejects.toBe(failure);
    await flush();
    expect(backend.events).toEqual(['acquire first', 'acquire second']);
    expect(table.snapshot().holders).toMatchObject([{ owner: { label: 'second' }, pending: true }]);
    backend.call(1).grant();
    (await second.promise).release();
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('a synchronous throw from the backend is handled the same way', async () => {
    const table = new LockTable({
      backend: {
        acquire: () => {
          throw new Error('boom');
        },
      },
    });
    await expect(table.acquire(owner('a'), ['port:1'])).rejects.toThrow('boom');
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('cancel while the backend waits: aborts its signal, releases locally, and gives back a late grant', async () => {
    const backend = new FakeBackend();
    const table = new LockTable({ backend });
    const controller = new AbortController();
    const first = table.acquire(owner('first'), ['port:1'], { signal: controller.signal });
    await flush();
    const call = backend.call(0);
    expect(call.signal.aborted).toBe(false);
    controller.abort(new Error('stop'));
    const error = await rejection(first);
    expect(error.code).toBe('ERR_LOCK_CANCELLED');
    expect(error.message).toContain('while waiting for the kernel locks');
    expect(call.signal.aborted).toBe(true);
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
    // The backend granted anyway (raced with the abort): its hold is returned at once.
    call.grant();
    await flush();
    expect(backend.events).toEqual(['acquire first', 'release first']);
  });

  it('timeout while the backend waits says so', async () => {
    const backend = new FakeBackend();
    const table = new LockTable({ backend });
    const error = await rejection(table.acquire(owner('first'), ['port:1'], { timeoutMs: 5 }));
    expect(error.code).toBe('ERR_LOCK_TIMEOUT');
    expect(error.message).toContain('waiting for the kernel locks on port:1');
    expect(backend.call(0).signal.aborted).toBe(true);
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('tryAcquire refuses on a backend table; wait: false still uses the backend', async () => {
    const backend = new FakeBackend();
    const table = new LockTable({ backend });
    expect(thrown(() => table.tryAcquire(owner('a'), ['port:1'])).code).toBe('ERR_LOCK_SYNC_UNAVAILABLE');
    const first = table.acquire(owner('a'), ['port:1'], { wait: false });
    await flush();
    expect((await rejection(table.acquire(owner('b'), ['port:1'], { wait: false }))).code).toBe('ERR_LOCK_BUSY');
    backend.call(0).grant();
    (await first).release();
  });

  it('a failing backend release is reported, and the local hold is released anyway', async () => {
    const backend = new FakeBackend();
    const reported: string[] = [];
    const table = new LockTable({
      backend,
      onBackendError: (error, lease) => reported.push(`${lease.owner.label}: ${(error as Error).message}`),
    });
    const first = table.acquire(owner('a'), ['port:1']);
    await flush();
    backend.call(0).grant({ release: () => Promise.reject(new Error('channel closed')) });
    (await first).release();
    await flush();
    expect(reported).toEqual(['a: channel closed']);
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });
});

describe('performance', () => {
  it('uncontended acquire + release is cheap', async () => {
    const table = new LockTable();
    const who = owner('bench');
    const resources = ['worktree:main'];
    const N = 100_000;
    // Warm-up so the JIT has compiled the hot path.
    for (let i = 0; i < 10_000; i++) (await table.acquire(who, resources)).release();
    let start = performance.now();
    for (let i = 0; i < N; i++) (await table.acquire(who, resources)).release();
    const asyncRate = N / ((performance.now() - start) / 1000);
    start = performance.now();
    for (let i = 0; i < N; i++) table.tryAcquire(who, ['path:/repo/node_modules', 'port:5173']).release();
    const syncRate = N / ((performance.now() - start) / 1000);
    console.log(
      `uncontended acquire+release: ${Math.round(asyncRate).toLocaleString('en')}/s (await acquire, 1 resource); ` +
        `${Math.round(syncRate).toLocaleString('en')}/s (tryAcquire, path + port)`,
    );
    expect(table.snapshot()).toEqual({ holders: [], waiters: [] });
  });

  it('a long queue on one resource drains in order without quadratic blow-up', async () => {
    const table = new LockTable();
    const first = await table.acquire(owner('first'), ['port:1']);
    const N = 5_000;
    const order: number[] = [];
    const waiters = Array.from({ length: N }, (_, i) =>
      table.acquire(owner(`w${i}`), ['port:1']).then((lease) => {
        order.push(i);
        lease.release();
      }),
    );
    const start = performance.now();
    first.release();
    await Promise.all(waiters);
    console.log(`drained ${N} waiters on one resource in ${(performance.now() - start).toFixed(1)} ms`);
    expect(order).toEqual(Array.from({ length: N }, (_, i) => i));
  });
});

describe('messages', () => {
  it('a busy error with a long queue names the first blockers and counts the rest', async () => {
    const table = new LockTable();
    const holder = await table.acquire(owner('holder', { kind: 'job', jobId: 7 }), ['port:1']);
    const waiters = Array.from({ length: 20 }, (_, i) =>
      table.acquire(owner(`w${i}`), ['port:1']).then((lease) => lease.release()),
    );
    const busy = thrown(() => table.tryAcquire(owner('x'), ['port:1']));
    expect(busy.message).toContain('port:1 is held by "holder" (kind=job, jobId=7)');
    expect(busy.message).toContain('port:1 is wanted first by "w0", which arrived earlier and waits');
    expect(busy.message).toContain('and 13 more');
    expect(busy.message).toContain('/job-kill 7');
    expect(busy.details['blockers']).toHaveLength(21);
    holder.release();
    await Promise.all(waiters);
  });
});
