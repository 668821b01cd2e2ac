/**
 * Wait latency: from the moment a job writes the line a waiting `status` (`until`) matches, or
 * exits, to that status's answer. The job is woken through a FIFO the bench writes to (the clock
 * starts at that write), so each sample also holds one wake-up of the job's shell.
 *
 * Against, the raw floor (the goal's): the same hops done bare. A waiting status is three hops
 * (bench to the job's shell, the shell's line or exit to the supervisor, the answer to the
 * runtime), so the floor is three too: the echo process (figure 6's, same socket and codec)
 * holds a request, a shell it reads is woken through a FIFO, and the echo process answers with a
 * reply the same size as ours once it reads the matching line (a RegExp) or once the shell has
 * exited and its stdout is at EOF (child_process's 'close'). Shown besides: a plain msgpack round
 * trip (two hops: the floor this figure had first, which left out the job's hop) and the job's
 * hop alone (the bench writes to a FIFO, a shell echoes a line on a pipe the bench reads).
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { JobRuntime } from '../../dist/src/index.js';
import { Echo } from '../lib/echo.mjs';
import { interleave } from '../lib/loop.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';
import { now } from '../lib/stats.mjs';

export const id = 'wait';
export const title = 'wait latency: a line that `until` matches (or an exit) to the waiting status answer';

const RAW = 'raw: a reader woken by the line / exit answers';
const ROUND_TRIP = 'raw msgpack round trip';
/** Long enough for the status request to be waiting in the supervisor before the trigger. */
const ARM_MS = 15;

/** Resolves once the job has printed `up` (a poll: `until` matches only lines that come after it is asked). */
async function upAndReading(runtime, job) {
  for (let tries = 0; tries < 5000; tries++) {
    if ((await runtime.status(job, { lines: 5 })).output.lines.some((line) => line.text === 'up')) return;
    await sleep(2);
  }
  throw new Error(`job ${job} never printed up`);
}

/** A FIFO the bench writes to and the job reads (opened read-write by the job: no EOF, no open block). */
function makeFifo(dir, name) {
  const file = path.join(dir, name);
  execFileSync('mkfifo', [file]);
  return file;
}

export async function run(ctx) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-bench-wait-'));
  const runtime = await JobRuntime.start({ settleMs: 0 });
  const echo = new Echo();
  const shells = [];
  try {
    // until: a job that echoes `READY n` for each n written to its FIFO.
    const lineFifo = makeFifo(dir, 'line');
    const liner = await runtime.background({ command: `exec 3<>${lineFifo}; echo up; while read -r n <&3; do echo "READY $n"; done` });
    await upAndReading(runtime, liner.id);
    const lineWriter = fs.openSync(lineFifo, 'w');
    let sample = 0;
    const untilCase = async () => {
      const n = sample++;
      const answer = runtime.status(liner.id, { waitMs: 10_000, until: `^READY ${n}$` });
      await sleep(ARM_MS);
      const start = now();
      fs.writeSync(lineWriter, `${n}\n`);
      const report = await answer;
      const ms = now() - start;
      if (!report.output.lines.some((line) => line.text === `READY ${n}`)) throw new Error(`the wait answered without READY ${n}`);
      return ms;
    };

    // exit: a fresh job per sample (started untimed) that exits once its FIFO has a line.
    const exitCase = async () => {
      const fifo = makeFifo(dir, `exit-${sample++}`);
      const job = await runtime.background({ command: `exec 3<>${fifo}; echo up; read -r n <&3; exit 0` });
      await upAndReading(runtime, job.id);
      const writer = fs.openSync(fifo, 'w');
      try {
        const answer = runtime.status(job.id, { waitMs: 10_000 });
        await sleep(ARM_MS);
        const start = now();
        fs.writeSync(writer, 'go\n');
        const report = await answer;
        const ms = now() - start;
        if (report.state !== 'exited') throw new Error(`the wait answered with the job ${report.state}`);
        return ms;
      } finally {
        fs.closeSync(writer);
      }
    };

    // The job's hop alone: a shell woken through a FIFO, echoing on a pipe the bench reads.
    const hopFifo = makeFifo(dir, 'hop');
    const shell = spawn('/bin/sh', ['-c', `exec 3<>${hopFifo}; echo up; while read -r n <&3; do echo "READY $n"; done`], { stdio: ['ignore', 'pipe', 'inherit'] });
    shells.push(shell);
    let hopWaiter = null;
    shell.stdout.on('data', () => hopWaiter?.());
    await new Promise((resolve) => (hopWaiter = resolve));
    const hopWriter = fs.openSync(hopFifo, 'w');
    const hopCase = async () => {
      const read = new Promise((resolve) => (hopWaiter = resolve));
      await sleep(ARM_MS);
      const start = now();
      fs.writeSync(hopWriter, `${sample++}\n`);
      await read;
      return now() - start;
    };

    // The raw round trip answers with what a wait answers: the liner's report.
    const reply = await runtime.status(liner.id, { lines: 50 });
    await echo.request({ type: 'set', value: { output: reply.output, facts: { job: liner.id, pid: liner.pid, exit: null, procs: 2 } } });
    const roundTripCase = async () => {
      await sleep(ARM_MS);
      const start = now();
      await echo.request({ type: 'read', params: { job: liner.id, tail: 50 } });
      return now() - start;
    };

    // The raw floor: the echo process reads a shell woken through a FIFO, as the supervisor does.
    const rawLineFifo = makeFifo(dir, 'raw-line');
    await echo.request({ type: 'watch', command: `exec 3<>${rawLineFifo}; echo up; while read -r n <&3; do echo "READY $n"; done` });
    const rawLineWriter = fs.openSync(rawLineFifo, 'w');
    const rawLineCase = async () => {
      const n = sample++;
      const answer = echo.request({ type: 'wait-line', until: `^READY ${n}$` });
      await sleep(ARM_MS);
      const start = now();
      fs.writeSync(rawLineWriter, `${n}\n`);
      await answer;
      return now() - start;
    };
    const rawExitCase = async () => {
      const fifo = makeFifo(dir, `raw-exit-${sample++}`);
      await echo.request({ type: 'watch', command: `exec 3<>${fifo}; echo up; read -r n <&3; exit 0` });
      const writer = fs.openSync(fifo, 'w');
      try {
        const answer = echo.request({ type: 'wait-exit' });
        await sleep(ARM_MS);
        const start = now();
        fs.writeSync(writer, 'go\n');
        await answer;
        return now() - start;
      } finally {
        fs.closeSync(writer);
      }
    };

    const groups = [];
    const goals = [];
    for (const [label, ours, raw] of [
      ['a new line matches until', untilCase, rawLineCase],
      ['the job exits', exitCase, rawExitCase],
    ]) {
      const cases = [
        { name: 'waiting runtime.status', fn: ours },
        { name: RAW, fn: raw },
        { name: ROUND_TRIP, fn: roundTripCase },
        { name: 'the job\'s hop: FIFO to shell to pipe', fn: hopCase },
      ];
      const results = await interleave({ runs: ctx.runs(60, 10), warmup: 2, cases, progress: ctx.progress(`${id} ${label}`) });
      const g = group(label, cases.map((entry, index) => row(entry.name, results.get(entry.name), { ours: index === 0 })), 'time');
      groups.push(g);
      goals.push(goal(`${label}: ≤ 1.5× the raw floor (a reader woken by the line / exit answers)`, ratioOf(g, RAW), '<=', 1.5));
    }
    fs.closeSync(lineWriter);
    fs.closeSync(rawLineWriter);
    fs.closeSync(hopWriter);
    return {
      groups,
      goals,
      notes: [
        `each sample: the status is sent, ${ARM_MS} ms pass (untimed), then the bench writes to the job's FIFO and the clock runs until the answer`,
        "ours and the raw floor each hold one wake-up of the job's shell; the plain round trip leaves it out, the hop row is that wake-up alone",
      ],
    };
  } finally {
    for (const shell of shells) shell.kill('SIGKILL');
    await echo.close();
    await runtime.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
