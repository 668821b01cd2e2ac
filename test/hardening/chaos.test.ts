/**
 * Scenario 9 of the hardening issue: chaos. Many jobs of assorted kinds (sleepers, floods, escapers,
 * SIGTERM ignorers, fast forkers, orphan makers, quick exits), many holding resource locks, each
 * stopped at a random moment: in the same tick as the call (before the spawn or while waiting for
 * its locks), a few ms later (mid-spawn), after the call answered, mid-output, or after it exited.
 * Halfway, a second runtime in its own process (holding resources the chaos jobs want) is SIGKILLed
 * with its jobs running.
 *
 * Afterwards nothing may leak: no process (the FIFO every job process inherited reaches EOF; no
 * process carries the marker), no zombie (of the test, the host, or a supervisor), no cgroup
 * directory of any supervisor used, no fd of the test process, no lock (a fresh runtime acquires
 * every resource used without waiting), and no child process of the test.
 *
 * HEPH_CHAOS_JOBS sets the number of jobs (default 1000 per containment mode, as the issue asks); HEPH_CHAOS_SEED
 * replays a run's plan (kinds, moments, locks, delays; the seed is printed).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it, onTestFinished } from 'vitest';
import { HephError, JobRuntime, type JobReport } from '../../src/index.js';
import type { ResourceSpec } from '../../src/locks/index.js';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';
import { childrenOf } from '../../supervisor/platform/procfs.js';
import { isReaped, see, waitUntil, zombieChildren, type SeenProcess } from '../helpers/kernel.js';
import { describeFds, EnvMarker, openFds, prng, SharedEofOracle, summary, within, zombiesOf } from '../helpers/hardening.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, tempDir } from '../helpers/runtime.js';
import { supervisorPid, waitFor } from '../../src/testing.js';

const JOBS = Number(process.env.HEPH_CHAOS_JOBS ?? 1000);
const SEED = Number(process.env.HEPH_CHAOS_SEED ?? Date.now() % 2 ** 31);
/** Jobs in flight at once. */
const WORKERS = 8;
/** Deadline of one kill: a kill that has not converged by then has hung. */
const KILL_DEADLINE_MS = 30_000;

const KINDS = {
  sleeper: 'exec sleep 30',
  printer: 'i=0; while :; do echo "line $i"; i=$((i + 1)); done',
  ticker: `exec ${FIXTURES}/ticker.sh`,
  quick: 'echo hi; exit 3',
  escaper: "setsid sh -c 'exec sleep 30' & (sleep 30 &); nohup sleep 30 >/dev/null 2>&1 & echo escaped; exec sleep 30",
  ignorer: "trap '' TERM; echo ignoring; sleep 30 & wait; sleep 30",
  forker: `exec ${FIXTURES}/fast-forker.sh`,
  orphans: 'i=0; while [ $i -lt 20 ]; do sleep 30 & i=$((i + 1)); done; echo orphaned',
} as const;
type Kind = keyof typeof KINDS;
/** Kinds in proportion (the forker is heavy on 2 cores: rarer). */
const KIND_TABLE: Kind[] = ['sleeper', 'sleeper', 'printer', 'printer', 'ticker', 'quick', 'quick', 'escaper', 'escaper', 'ignorer', 'forker', 'orphans', 'orphans'];
type Moment = 'same-tick' | 'mid-spawn' | 'after-call' | 'mid-output' | 'after-exit';
const MOMENTS: Moment[] = ['same-tick', 'mid-spawn', 'after-call', 'mid-output', 'after-exit'];
/** What the chaos jobs lock; the crashed host holds path:/chaos/host and port:9009. */
const POOL = ['port:9001', 'port:9002', 'port:9003', 'path:/chaos/a', 'path:/chaos/b', 'path:/chaos', 'port:9009'];
const HOST_LOCKS = ['path:/chaos/host', 'port:9009', '-'];

interface Plan {
  kind: Kind;
  moment: Moment;
  locks: ResourceSpec[];
  delayMs: number;
  lines: number;
  signal: 'TERM' | 'KILL';
}

function makePlans(seed: number, count: number): Plan[] {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  return Array.from({ length: count }, () => {
    const kind = KIND_TABLE[int(KIND_TABLE.length)]!;
    const locks: ResourceSpec[] = [];
    if (random() < 0.4) {
      const wanted = new Set([POOL[int(POOL.length)]!, ...(random() < 0.3 ? [POOL[int(POOL.length)]!] : [])]);
      for (const resource of wanted) locks.push({ resource, mode: random() < 0.3 ? 'shared' : 'exclusive' });
    }
    return { kind, moment: MOMENTS[int(MOMENTS.length)]!, locks, delayMs: int(20), lines: 1 + int(30), signal: random() < 0.3 ? 'KILL' : 'TERM' };
  });
}

/** Zombies and processes alive, by parent, for the "before and after" counts. */
function zombieCount(parents: number[]): number {
  return zombiesOf(parents).length;
}

/** A pid with its name, for a message (the name of a zombie stays readable until it is reaped). */
function described(pid: number): string {
  try {
    return `${pid} (${fs.readFileSync(`/proc/${pid}/comm`, 'latin1').trim()})`;
  } catch {
    return `${pid} (gone)`;
  }
}

describe.each(modeRows())('chaos (%s)', (mode, skip) => {
  it.skipIf(skip)(
    `${JOBS} jobs stopped at random moments, with a runtime crash halfway, leak nothing`,
    async () => {
      console.log(`[${mode}] chaos: ${JOBS} jobs, seed ${SEED} (replay with HEPH_CHAOS_SEED=${SEED} HEPH_CHAOS_JOBS=${JOBS})`);
      const plans = makePlans(SEED, JOBS);
      const lockDir = tempDir();
      const cwd = tempDir();
      const cgroupParent = findOwnCgroupDir();

      // Warm up what a runtime opens once per process (libuv's signal pipe for child processes...),
      // so the fd count before and after compares like with like.
      const warm = await JobRuntime.start({ containment: mode, settleMs: 0, lockDir });
      await warm.background({ command: 'true', waitMs: 5000 });
      await warm.close();
      const fdsBefore = openFds();
      const childrenBefore = childrenOf(process.pid);
      const zombiesBefore = zombieCount([process.pid]);

      const oracle = new SharedEofOracle();
      // However the test ends, the test's FIFO ends are closed (dispose is idempotent).
      onTestFinished(() => oracle.dispose());
      const marker = new EnvMarker();
      // keepFinished 200: finished jobs are evicted during the run, but never one this test is about to stop.
      const runtime = await JobRuntime.start({ containment: mode, settleMs: 100, killGraceMs: 300, maxJobs: 64, keepFinished: 200, lockDir, cwd });
      const failures: string[] = [];
      const supervisors = new Set<number>();
      const exitedEvents = new Map<number, number>();
      const cleanedEvents = new Map<number, number>();
      runtime.onJobEvent((event) => {
        const counts = event.type === 'exited' ? exitedEvents : event.type === 'cleaned-up' ? cleanedEvents : null;
        counts?.set(event.job, (counts.get(event.job) ?? 0) + 1);
      });
      const spawned = new Map<number, number>(); // job id -> plan index, for jobs that got a pid
      const momentsSeen = new Map<string, number>();
      const stateOf = (id: number) => runtime.list().find((job) => job.id === id)?.state;
      /** The crashed runtime: its process and its supervisor (set once it has started). */
      const crashed: { host?: { pid: number; supervisor: SeenProcess } } = {};
      let crash: Promise<void> = Promise.resolve();
      /** What the negative control found wrong (the oracles could not see running jobs). */
      const controls: string[] = [];

      async function crashHost(): Promise<void> {
        const commands = ['printer', 'escaper', 'ignorer'].map((kind) => `${oracle.prefix}${KINDS[kind as Kind]} # host`);
        const child = spawn(process.execPath, [path.join(FIXTURES, 'chaos-host.mjs'), mode, ...commands], {
          stdio: ['ignore', 'pipe', 'inherit'],
          env: { ...marker.env(), HEPH_TEST_LOCKS_EACH: HOST_LOCKS.join(','), HEPH_TEST_LOCK_DIR: lockDir },
        });
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        try {
          const line = await within(
            new Promise<string>((resolve, reject) => {
              readline.createInterface({ input: child.stdout! }).once('line', resolve);
              child.once('exit', (code) => reject(new Error(`the runtime host exited early with ${code}`)));
            }),
            30_000,
            'the runtime host to start its jobs',
          );
          const info = JSON.parse(line) as { supervisorPid: number; jobs: { pid: number }[] };
          crashed.host = { pid: child.pid!, supervisor: see(info.supervisorPid) };
          // Negative control: both oracles see the host's jobs while they run (their leaders hold
          // the FIFO's write end as fd 9 and carry the marker), so their silence afterwards means
          // something. A job is answered for once its shell has exec'd, which may be before that
          // shell has run its first command (`exec 9>FIFO`): each is given a moment to get there.
          const fd9Of = (pid: number) => {
            try {
              return fs.readlinkSync(`/proc/${pid}/fd/9`);
            } catch {
              return ''; // not open yet, or gone: reported below
            }
          };
          const seen = (pid: number) => fd9Of(pid) === oracle.fifo && marker.survivors().includes(pid);
          for (const job of info.jobs) {
            await waitUntil(() => seen(job.pid), `host job ${job.pid} seen by both oracles`, 5000).catch(() => {
              const state = fs.existsSync(`/proc/${job.pid}`) ? fs.readFileSync(`/proc/${job.pid}/stat`, 'latin1').split(') ')[1]?.[0] : 'gone';
              controls.push(`host job ${job.pid} (state ${state}): fd 9 -> ${fd9Of(job.pid) || 'none'}, marked ${marker.survivors().includes(job.pid)}`);
            });
          }
          // Its jobs run (the printer floods) for a random moment, then the runtime dies.
          await waitFor(runtime, () => false, Math.floor(prng(SEED ^ 0x5eed)() * 300));
        } finally {
          child.kill('SIGKILL');
          await exited;
        }
        const supervisor = crashed.host?.supervisor;
        if (supervisor) await waitUntil(() => isReaped(supervisor), "the crashed runtime's supervisor to exit", 20_000);
      }

      async function runOne(i: number): Promise<void> {
        const plan = plans[i]!;
        const command = `${oracle.prefix}${KINDS[plan.kind]} # chaos ${i}`;
        const call = runtime.background({ command, env: marker.env(), ...(plan.locks.length ? { locks: plan.locks } : {}) });
        call.catch(() => undefined);
        const record = runtime.list().at(-1);
        if (!record || record.command !== command) {
          failures.push(`#${i}: background refused at once: ${String(await call.then((report) => report.text, (error: Error) => error.message))}`);
          return;
        }
        const id = record.id;
        let moment: string = plan.moment;
        if (plan.moment === 'mid-spawn') {
          await waitFor(runtime, () => false, plan.delayMs);
        } else if (plan.moment !== 'same-tick') {
          // A job still waiting for its locks after a moment is stopped while it waits.
          if (!(await waitFor(runtime, () => stateOf(id) !== 'waiting', 300))) {
            moment = 'waiting for locks';
          } else {
            await within(call, 30_000, `background #${i}`);
            if (plan.moment === 'mid-output' && (plan.kind === 'printer' || plan.kind === 'ticker')) {
              const deadline = Date.now() + 10_000;
              while (Date.now() < deadline && stateOf(id) === 'running') {
                const read = await runtime.status(id, { lines: 0 });
                if ((read.output?.totalLines ?? 0) >= plan.lines) break;
                await waitFor(runtime, () => false, 5);
              }
            } else if (plan.moment === 'after-exit' && (plan.kind === 'quick' || plan.kind === 'orphans')) {
              await waitFor(runtime, () => stateOf(id) !== 'running', 10_000);
            } else if (plan.moment !== 'after-call') {
              moment = 'after-call';
            }
          }
        }
        momentsSeen.set(moment, (momentsSeen.get(moment) ?? 0) + 1);
        if (supervisorPid(runtime) !== null) supervisors.add(supervisorPid(runtime));
        let final: JobReport;
        try {
          final = await within(runtime.kill(id, { signal: plan.signal, graceMs: 300 }), KILL_DEADLINE_MS, `the kill of job ${id} (#${i})`, () =>
            runtime.list().find((job) => job.id === id)?.header,
          );
        } catch (error) {
          failures.push(`#${i} (${plan.kind}, ${moment}): kill failed: ${(error as Error).message}`);
          return;
        }
        await within(call, 30_000, `background #${i} to answer after its kill`).catch((error: Error) => failures.push(`#${i}: ${error.message}`));
        const ok = final.cleanedUp && (final.state === 'killed' || final.state === 'exited' || final.state === 'failed' || final.state === 'cancelled');
        if (!ok) failures.push(`#${i} (${plan.kind}, ${moment}): after kill: ${final.header} cleanedUp=${final.cleanedUp} ${final.reason ?? ''}`);
        if (final.pid !== null) spawned.set(id, i);
      }

      try {
        let next = 0;
        const worker = async () => {
          while (next < JOBS) {
            const i = next++;
            if (i === Math.floor(JOBS / 2)) crash = crashHost().catch((error: Error) => void failures.push(`crash: ${error.message}`));
            await runOne(i).catch((error: Error) => failures.push(`#${i}: ${error.stack ?? error.message}`));
          }
        };
        const started = Date.now();
        await Promise.all(Array.from({ length: WORKERS }, worker));
        await crash;
        if (!crashed.host) failures.push('the runtime to crash never started');
        if (controls.length > 0) failures.push(`negative control: the oracles did not see running jobs: ${controls.join('; ')}`);
        const took = Date.now() - started;

        // Every job that ran: one exit, one cleanup, and no zombie left with the supervisor.
        for (const [id, i] of spawned) {
          if ((exitedEvents.get(id) ?? 0) !== 1) failures.push(`#${i} (job ${id}): ${exitedEvents.get(id) ?? 0} exited events`);
          if ((cleanedEvents.get(id) ?? 0) !== 1) failures.push(`#${i} (job ${id}): ${cleanedEvents.get(id) ?? 0} cleaned-up events`);
        }
        const open = runtime.list().filter((job) => !job.cleanedUp);
        if (open.length > 0) failures.push(`jobs not cleaned up: ${open.map((job) => job.header).join(' | ')}`);
        const lost = runtime.list().filter((job) => job.state === 'lost');
        if (lost.length > 0) failures.push(`jobs lost (the chaos runtime's supervisor died): ${lost.map((job) => job.header).join(' | ')}`);
        for (const pid of supervisors) {
          // The reaper thread reaps each child as it dies, so one that died a moment before this
          // look is a zombie for that moment; one that stays (nothing would ever reap it) is the
          // leak looked for. A stuck reaper (asleep until the next spawn, say) fails here too: no
          // spawn comes during the wait.
          const seen = zombieChildren(pid).map(described);
          if (seen.length === 0) continue;
          await waitUntil(() => zombieChildren(pid).length === 0, `the zombie children of supervisor ${pid} to be reaped`, 5_000).catch(() => undefined);
          const left = zombieChildren(pid).map(described);
          if (left.length > 0) failures.push(`supervisor ${pid} has zombie children: ${left.join(' ')}`);
          else console.log(`[${mode}] supervisor ${pid}: ${seen.join(' ')} reaped just after the look`);
        }
        console.log(
          `[${mode}] ${JOBS} jobs in ${took} ms; moments: ${[...momentsSeen].map(([name, n]) => `${name} ${n}`).join(', ')}; ` +
            `${spawned.size} spawned; the crashed runtime's supervisor was ${crashed.host?.supervisor.pid ?? 'never started'}`,
        );
      } finally {
        await runtime.close();
      }

      // Processes: every job process (of both runtimes) let go of the FIFO, none carries the marker.
      if (!(await oracle.finish(20_000))) failures.push(`job processes still hold the FIFO; marked survivors: ${marker.survivors().join(' ')}`);
      oracle.dispose();
      const survivors = marker.survivors();
      if (survivors.length > 0) failures.push(`${survivors.length} marked processes survived: ${survivors.slice(0, 20).join(' ')}`);
      // Zombies: none of the test's own, the host's, or any supervisor's.
      const parents = [process.pid, ...supervisors, ...(crashed.host ? [crashed.host.pid, crashed.host.supervisor.pid] : [])];
      const zombiesAfter = zombieCount(parents);
      if (zombiesAfter > zombiesBefore) failures.push(`zombies: ${zombiesBefore} before, ${zombiesAfter} after (${zombiesOf(parents).join(' ')})`);
      // Cgroups: no subtree of any supervisor used.
      if (cgroupParent.ok) {
        const pids = [...supervisors, ...(crashed.host ? [crashed.host.supervisor.pid] : [])];
        // Subtrees are named `heph-jobs-<pid>-<start time>`.
        const left = fs
          .readdirSync(cgroupParent.parent)
          .filter((name) => pids.some((pid) => name.startsWith(`heph-jobs-${pid}-`)))
          .map((name) => path.join(cgroupParent.parent, name));
        if (left.length > 0) failures.push(`cgroup directories left: ${left.join(' ')}`);
      }
      // Child processes of the test: the supervisors and the host are gone.
      await waitUntil(() => childrenOf(process.pid).length <= childrenBefore.length, 'the test process to have no new children', 10_000).catch(() =>
        failures.push(`children of the test process: ${childrenBefore.length} before, ${childrenOf(process.pid).join(' ')} after`),
      );

      // Locks: a fresh runtime takes every resource used, at once (wait: false), each within a deadline.
      const fresh = await JobRuntime.start({ containment: mode, lockDir });
      try {
        for (const resource of [...POOL, ...HOST_LOCKS.filter((lock) => lock !== '-')]) {
          try {
            const lease = await within(fresh.locks.acquire({ label: 'leak check' }, [resource], { wait: false }), 10_000, `a fresh runtime to take ${resource}`);
            lease.release();
          } catch (error) {
            failures.push(`lock ${resource} leaked: ${error instanceof HephError ? `${error.code} ` : ''}${(error as Error).message}`);
          }
        }
      } finally {
        await fresh.close();
      }

      // Fds: the test process holds what it held before.
      const fdsAfter = openFds();
      if (fdsAfter.length !== fdsBefore.length) failures.push(`fds: ${fdsBefore.length} before, ${fdsAfter.length} after: ${describeFds().join(', ')}`);

      summary(9, JOBS, failures.length, `${mode}, seed ${SEED}`);
      expect(failures).toEqual([]);
    },
    300_000,
  );
});

