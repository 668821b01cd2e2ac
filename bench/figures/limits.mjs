/**
 * Figure 15, limits (issue 25): what each mechanism that holds job limits here does, and costs.
 * Each mechanism this machine has: the controllers a runtime picks by itself (cgroup v1 groups,
 * or the job cgroup's v2 controllers where they were delegated), and the watchdog (forced by the
 * tests' switch). Three parts:
 *   - memory overshoot: a job growing as fast as python's bytearrays can, under a 128 MiB limit,
 *     to its stop; the peak the supervisor states (report.limits.peakMemoryBytes) and the job's
 *     own (the leader's VmHWM, polled by the bench until it died), each ÷ the limit;
 *   - cost: the supervisor's CPU time while 8 sleeping jobs, each under a memory limit it never
 *     reaches, run for a fixed window, against a supervisor with 8 such jobs and no limits; the
 *     three supervisors measured over the same windows;
 *   - cpu: a busy shell loop at cpus 0.5, its CPU time ÷ wall time (the job's own stats), beside
 *     the same loop with no cpu limit.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { JobRuntime } from '../../dist/src/index.js';
import { withTestSwitches } from '../../dist/src/testing.js';
import { freshMarker } from '../lib/context.mjs';
import { JobEvents } from '../lib/job-events.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, row, skippedRow } from '../lib/report.mjs';
import { isDead, memoryOf, sleep, snapshot } from '../lib/procs.mjs';
import { now, summarize } from '../lib/stats.mjs';

export const id = 'limits';
export const title = 'limits: memory overshoot, supervisor cost and cpu share, by each mechanism here';

const MiB = 2 ** 20;
const LIMIT = 128 * MiB;
const JOBS = 8;
const CPUS = 0.5;
/** How often the bench reads the growing job's VmHWM. */
const POLL_MS = 5;
/** A job the limit did not stop in this time is killed and its sample dropped. */
const STOP_WITHIN_MS = 20_000;
const USER_HZ = 100;
/** How often the supervisor looks at a limited job (supervisor/limits/job-limits.ts, LIMIT_WATCH_MS). */
const LIMIT_LOOK_MS = 100;
/** The watchdog, forced by the tests' switch where a controller is in reach. */
const WATCHDOG = 'forced watchdog';

/** Appends 8 MiB bytearrays (zero-filled: every page touched) with no sleep, up to 2 GiB; exits 3 if nothing stopped it. */
const GROW = `import sys
chunks = []
for i in range(256):
    chunks.append(bytearray(8 << 20))
sys.exit(3)`;

/** The same growth to the limit, outside the runtime: how fast the job grows here, in MiB/s. */
const GROW_RATE = `import time
start = time.perf_counter()
chunks = [bytearray(8 << 20) for i in range(${LIMIT / (8 * MiB)})]
print(${LIMIT / MiB} / (time.perf_counter() - start))`;

const mechanismName = (by) => by.replace('-', ' ');

/**
 * The interpreter python3 names (a shim such as pyenv's adds a second of shell before it, and
 * would be the job's leader): null, with the reason, when there is none.
 */
function findPython() {
  try {
    const file = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8', timeout: 20_000 }).trim();
    const rate = Number(execFileSync(file, ['-c', GROW_RATE], { encoding: 'utf8', timeout: 20_000 }).trim());
    return { file, rate };
  } catch (error) {
    return { file: null, reason: `no python3 to grow memory with (${error.message.split('\n')[0]})` };
  }
}

function envWith(marker) {
  const [key, value] = marker.split('=');
  return { ...process.env, [key]: value };
}

/** CPU time of every thread of `pid` so far, in ms: the scheduler's own count (ns), else utime + stime (ticks). */
function cpuMs(pid) {
  let ns = 0;
  try {
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'latin1').split(' ')[0]);
      } catch {
        // a thread that ended meanwhile
      }
    }
  } catch {
    return NaN;
  }
  return ns > 0 ? ns / 1e6 : ticksMs(pid);
}

/** utime + stime of /proc/PID/stat (all threads, those ended too), in ms: 10 ms ticks. */
function ticksMs(pid) {
  const text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  // The command name (field 2) may hold spaces: count from the last ')'; utime and stime are fields 14 and 15.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / USER_HZ) * 1000;
}

/**
 * One growing job under the limit, to its cleanup: the peak the supervisor states and the
 * leader's VmHWM last seen alive, each ÷ the limit; `failed` when the limit did not stop it.
 */
function overshootCase(runtime, events, python, mechanism, marker) {
  return async () => {
    const job = await runtime.background({ command: `exec '${python}' -c '${GROW}'`, limits: { memoryBytes: LIMIT }, env: envWith(marker) });
    const leader = snapshot(job.pid === null ? [] : [job.pid])[0];
    let hwm = NaN;
    let done = false;
    const cleaned = events.wait('cleaned-up', job.id).then(() => (done = true));
    const deadline = Date.now() + STOP_WITHIN_MS;
    // A zombie has no VmHWM (NaN): the last live reading stays.
    while (!done && leader && !isDead(leader) && Date.now() < deadline) {
      try {
        const { hwm: seen } = memoryOf(leader.pid);
        if (seen > hwm || Number.isNaN(hwm)) hwm = Number.isNaN(seen) ? hwm : seen;
      } catch {
        break;
      }
      await sleep(POLL_MS);
    }
    const stopped = await Promise.race([cleaned.then(() => true), sleep(Math.max(0, deadline - Date.now())).then(() => false)]);
    if (!stopped) await runtime.kill(job.id, { signal: 'KILL' });
    const report = await runtime.status(job.id, { lines: 1 });
    events.forget(job.id);
    const limits = report.limits;
    if (!stopped || limits?.reached !== 'memory' || limits.by.memory !== mechanism || limits.peakMemoryBytes === null) {
      return { failed: `job ${job.id}: ${report.state}, limit reached ${limits?.reached ?? 'none'} by ${limits?.by.memory ?? 'nothing'}`, stated: NaN, own: NaN };
    }
    return { stated: limits.peakMemoryBytes / LIMIT, own: hwm / LIMIT };
  };
}

/** Starts `JOBS` sleeping jobs; with `limits`, each under them. */
async function sleepers(runtime, limits, marker) {
  const jobs = [];
  for (let i = 0; i < JOBS; i++) jobs.push(await runtime.background({ command: 'exec sleep 1000', env: envWith(marker), ...(limits ? { limits } : {}) }));
  return jobs;
}

/** CPU time ÷ wall time of a running job over `windows` windows of `ms` each, from its stats. */
async function cpuShare(runtime, job, windows, ms) {
  const read = async () => {
    const report = await runtime.status(job, { lines: 1 });
    return { at: now(), cpu: report.stats?.cpuSeconds ?? NaN };
  };
  const shares = [];
  let last = await read();
  for (let i = 0; i < windows; i++) {
    await sleep(ms);
    const next = await read();
    shares.push((next.cpu - last.cpu) / ((next.at - last.at) / 1000));
    last = next;
  }
  return shares;
}

export async function run(ctx) {
  const marker = freshMarker('limits');
  const auto = await JobRuntime.start({ settleMs: 0 });
  const watchdog = await JobRuntime.start(withTestSwitches({ settleMs: 0 }, { limitsBy: 'watchdog' }));
  const unlimited = await JobRuntime.start({ settleMs: 0 });
  const runtimes = [auto, watchdog, unlimited];
  const notes = [];
  try {
    const autoCaps = await auto.capabilities();
    const watchdogCaps = await watchdog.capabilities();
    const unlimitedCaps = await unlimited.capabilities();
    // What the runtime picks by itself; the watchdog there means no controller is in reach.
    const controller = autoCaps.jobLimits.by.memory === 'watchdog' ? null : autoCaps.jobLimits.by.memory;
    const noController = `no memory controller in reach (capabilities: memory limits by ${autoCaps.jobLimits.by.memory})`;
    if (watchdogCaps.jobLimits.by.memory !== 'watchdog') throw new Error(`the forced watchdog runtime holds memory by ${watchdogCaps.jobLimits.by.memory}`);

    // Memory overshoot.
    const python = findPython();
    const overshootRows = [];
    let watchdogOwn = NaN;
    if (python.file === null) {
      for (const name of controller ? [mechanismName(controller), WATCHDOG] : [WATCHDOG]) overshootRows.push(skippedRow(name, python.reason));
    } else {
      const events = { [WATCHDOG]: new JobEvents(watchdog) };
      const cases = [{ name: WATCHDOG, fn: overshootCase(watchdog, events[WATCHDOG], python.file, 'watchdog', marker) }];
      if (controller) {
        events.controller = new JobEvents(auto);
        cases.unshift({ name: mechanismName(controller), fn: overshootCase(auto, events.controller, python.file, controller, marker) });
      }
      try {
        const results = await interleave({ runs: ctx.runs(6, 1), warmup: ctx.runs(1, 0), cases, progress: ctx.progress(`${id} overshoot`) });
        for (const entry of cases) {
          const samples = results.get(entry.name);
          for (const sample of samples) if (sample.failed) notes.push(`not stopped by the memory limit, sample dropped: ${sample.failed}`);
          overshootRows.push(row(`${entry.name}: peak the supervisor states`, samples.map((s) => s.stated), { unit: '×' }));
          overshootRows.push(row(`${entry.name}: the job's own peak (VmHWM)`, samples.map((s) => s.own), { unit: '×' }));
        }
        watchdogOwn = overshootRows.find((entry) => entry.name === `${WATCHDOG}: the job's own peak (VmHWM)`).median;
      } finally {
        for (const entry of Object.values(events)) entry.stop();
      }
      if (!controller) overshootRows.unshift(skippedRow('a controller', noController));
      notes.push(
        `overshoot: the job is ${python.file} appending 8 MiB bytearrays with no sleep; it grew at ${python.rate.toFixed(0)} MiB/s here (alone, outside the runtime), so one 100 ms watchdog look is ~${((python.rate * 0.1) / (LIMIT / MiB)).toFixed(2)}× the limit`,
        "peak the supervisor states: report.limits.peakMemoryBytes (a controller: the kernel's own peak of the job's group; the watchdog: its largest sample); the job's own: the leader's VmHWM, read every 5 ms until it died (a lower bound), which counts the interpreter's mapped files too (~6 MiB, 0.05×), pages a controller charges to whoever read them first",
      );
    }
    // No row is ours: a ratio of one mechanism to another says nothing here.
    const overshoot = group(`memory overshoot: peak ÷ the ${LIMIT / MiB} MiB limit, a job growing 8 MiB at a time to its stop`, overshootRows);

    // Cost: three supervisors, 8 sleeping jobs each, measured over the same windows.
    const windowMs = ctx.runs(3000, 1000);
    const windows = ctx.runs(3, 1);
    const memoryLimit = { memoryBytes: LIMIT };
    const measured = [
      { by: controller ? mechanismName(controller) : null, runtime: auto, pid: autoCaps.supervisorPid, samples: [], ticks: 0 },
      { by: WATCHDOG, runtime: watchdog, pid: watchdogCaps.supervisorPid, samples: [], ticks: 0 },
      { by: null, runtime: unlimited, pid: unlimitedCaps.supervisorPid, samples: [], ticks: 0 },
    ];
    const started = [];
    for (const [k, entry] of measured.entries()) {
      if (k < 2 && entry.by === null) continue;
      started.push({ runtime: entry.runtime, jobs: await sleepers(entry.runtime, k < 2 ? memoryLimit : null, marker) });
    }
    await sleep(300);
    const costProgress = ctx.progress(`${id} cost`);
    for (let i = 0; i < windows; i++) {
      const before = measured.map((entry) => ({ cpu: cpuMs(entry.pid), ticks: ticksMs(entry.pid), at: now() }));
      await sleep(windowMs);
      measured.forEach((entry, k) => {
        const seconds = (now() - before[k].at) / 1000;
        entry.samples.push((cpuMs(entry.pid) - before[k].cpu) / seconds);
        entry.ticks += ticksMs(entry.pid) - before[k].ticks;
      });
      costProgress(i + 1, windows);
    }
    for (const { runtime, jobs } of started) await Promise.all(jobs.map((job) => runtime.kill(job.id, { signal: 'KILL' })));
    const none = row(`${JOBS} jobs, no limits`, measured[2].samples, { unit: 'ms/s' });
    const costGroups = measured.slice(0, 2).map((entry) => {
      const ours = entry.by === null ? skippedRow(`${JOBS} jobs, memory limit by a controller`, noController) : row(`${JOBS} jobs, memory limit by ${entry.by}`, entry.samples, { unit: 'ms/s', ours: true });
      const g = group(`supervisor CPU per second, ${JOBS} sleeping jobs, memory limit by ${entry.by ?? 'a controller'}`, [ours, { ...none }], 'time');
      // Against a supervisor that never ran in the windows the ratio is infinite: none is shown.
      for (const r of g.rows) if (r.ratio !== undefined && !Number.isFinite(r.ratio)) delete r.ratio;
      return g;
    });
    const looked = measured.slice(0, 2).filter((entry) => entry.by !== null);
    notes.push(
      `cost: ${windows} window(s) of ${windowMs / 1000} s once all ${JOBS} jobs of each supervisor ran (their spawn and cleanup not counted); CPU time of every supervisor thread from /proc/PID/task/*/schedstat (ns)`,
      `cost per job and look (${1000 / LIMIT_LOOK_MS} looks a second): ${looked.map((entry) => `${entry.by} ${(summarize(entry.samples).median / JOBS / (1000 / LIMIT_LOOK_MS)).toFixed(3)} ms`).join(', ')}${none.median === 0 ? '; with no limits the supervisor did not run at all in the windows, so no ratio' : ''}`,
      `utime + stime from /proc/PID/stat over the same windows (10 ms ticks): ${[...looked.map((entry) => `${entry.by} ${entry.ticks.toFixed(0)} ms`), `no limits ${measured[2].ticks.toFixed(0)} ms`].join(', ')}`,
    );

    // CPU share: a busy loop at cpus 0.5 beside one with no cpu limit, each read from its stats;
    // by the controller the runtime picks, then by the watchdog (it freezes the job's cgroup).
    const cpuRows = [];
    const cpuWindows = ctx.runs(3, 1);
    const cpuCase = async (runtime, by) => {
      const limited = await runtime.background({ command: 'while :; do :; done', limits: { cpus: CPUS }, env: envWith(marker) });
      const free = await runtime.background({ command: 'while :; do :; done', env: envWith(marker) });
      try {
        await sleep(200);
        const [limitedShares, freeShares] = await Promise.all([cpuShare(runtime, limited.id, cpuWindows, 1000), cpuShare(runtime, free.id, cpuWindows, 1000)]);
        const report = await runtime.status(limited.id, { lines: 1 });
        cpuRows.push(row(`cpus ${CPUS} by ${by}`, limitedShares, { unit: 'core', ours: true }));
        cpuRows.push(row(`no cpu limit, beside it (${by})`, freeShares, { unit: 'core' }));
        notes.push(`cpu by ${by}: ${cpuWindows} window(s) of 1 s; CPU time from the job's stats (cpuSeconds); the limited loop was held back ${report.limits?.throttledMs ?? '-'} ms at its limit (report.limits.throttledMs)`);
      } finally {
        await runtime.kill(limited.id, { signal: 'KILL' });
        await runtime.kill(free.id, { signal: 'KILL' });
      }
    };
    if (autoCaps.jobLimits.by.cpu === null || autoCaps.jobLimits.by.cpu === 'watchdog') cpuRows.push(skippedRow(`cpus ${CPUS} by a controller`, `no cpu controller in reach (capabilities: cpu limits by ${autoCaps.jobLimits.by.cpu ?? 'nothing'})`));
    else await cpuCase(auto, mechanismName(autoCaps.jobLimits.by.cpu));
    if (watchdogCaps.jobLimits.by.cpu === 'watchdog') await cpuCase(watchdog, WATCHDOG);
    else cpuRows.push(skippedRow(`cpus ${CPUS} by ${WATCHDOG}`, `the watchdog holds cpu only by freezing a job's own cgroup (cgroup mode); here: ${watchdogCaps.containment.mode}`));
    const cpu = group(`cpu: a busy shell loop, its CPU time ÷ wall time`, cpuRows);
    // A share beside an unlimited loop is no speed-up or slow-down; drop the ratio.
    for (const r of cpu.rows) delete r.ratio;

    return {
      groups: [overshoot, ...costGroups, cpu],
      goals: [goal('watchdog overshoot ≤ 1.5× the limit (the job’s own peak)', watchdogOwn, '<=', 1.5)],
      notes,
    };
  } finally {
    for (const runtime of runtimes) await runtime.close();
  }
}
