/**
 * Scenario 5 of the hardening issue: exit-status fidelity under load. 200 short jobs run at once,
 * each ending its own way (a distinct exit code, or a distinct signal it sends itself), while another
 * job leaves 1000 orphans for the supervisor to reap. Every job must report exactly its own status
 * (and its own output line), and exactly once (one `exited` and one `cleaned-up` event per job).
 */
import { constants } from 'node:os';
import { describe, expect, it } from 'vitest';
import { zombieChildren } from '../helpers/kernel.js';
import { EnvMarker, summary, waitForLines, within } from '../helpers/hardening.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';
import { supervisorPid, waitFor } from '../../src/testing.js';

const JOBS = 200;
const ORPHANS = 1000;
/** Signals whose default action ends the process: the standard ones, then the real-time ones. */
const SIGNALS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 24, 25, 26, 27, 29, 30, 31, ...Array.from({ length: 31 }, (_, i) => 34 + i)];

/** The name the supervisor reports for signal `n` (the first name Node knows for it). */
function signalName(n: number): string {
  return Object.entries(constants.signals).find(([, value]) => value === n)?.[0] ?? `signal ${n}`;
}

type Expected = { kind: 'code'; code: number } | { kind: 'signal'; signal: string };

function plan(i: number): { command: string; expected: Expected } {
  // Every fourth job kills itself with its own signal; the others exit with their own code.
  if (i % 4 === 3) {
    const n = SIGNALS[((i - 3) / 4) % SIGNALS.length]!;
    return { command: `ulimit -c 0; echo job-${i}; kill -${n} $$; echo survived-${n}`, expected: { kind: 'signal', signal: signalName(n) } };
  }
  return { command: `echo job-${i}; exit ${i % 256}`, expected: { kind: 'code', code: i % 256 } };
}

describe.each(modeRows())('exit-status fidelity under load (%s)', (mode, skip) => {
  it.skipIf(skip)(`${JOBS} concurrent jobs report their own status once while ${ORPHANS} orphans are reaped`, async () => {
    const runtime = await startRuntime(mode, { maxJobs: 256, keepFinished: 1000 });
    const cwd = tempDir();
    const marker = new EnvMarker();
    const exited = new Map<number, number>();
    const cleaned = new Map<number, number>();
    // The overlap, for the log: marked processes (mostly orphans) alive when the first and half the jobs had exited.
    let orphansAtFirst = -1;
    let orphansAtHalf = -1;
    runtime.onJobEvent((event) => {
      const counts = event.type === 'exited' ? exited : event.type === 'cleaned-up' ? cleaned : null;
      counts?.set(event.job, (counts.get(event.job) ?? 0) + 1);
      if (event.type === 'exited' && exited.size === 1) orphansAtFirst = marker.survivors().length;
      if (event.type === 'exited' && exited.size === JOBS / 2) orphansAtHalf = marker.survivors().length;
    });

    const orphans = await runtime.background({ command: `COUNT=${ORPHANS} CODE=42 exec ${FIXTURES}/orphan-maker.sh`, cwd, env: marker.env() });
    // The jobs start while the orphans are being made and reaped.
    await waitForLines(runtime, orphans.id, (lines) => lines.includes('orphans 100'), 'the first 100 orphans');
    const plans = Array.from({ length: JOBS }, (_, i) => plan(i));
    const started = Date.now();
    const reports = await within(
      Promise.all(plans.map((entry) => runtime.background({ command: entry.command, cwd, env: marker.env() }))),
      120_000,
      `${JOBS} jobs to start`,
    );
    const ids = [orphans.id, ...reports.map((report) => report.id)];
    const allDone = await waitFor(runtime, () => ids.every((id) => runtime.list().find((job) => job.id === id)?.cleanedUp === true), 120_000);
    const took = Date.now() - started;
    const failures: string[] = [];
    if (!allDone) failures.push(`not every job was cleaned up after 120 s: ${runtime.list().filter((job) => !job.cleanedUp).map((job) => job.header).join(' | ')}`);

    for (const [i, report] of reports.entries()) {
      const { expected } = plans[i]!;
      const final = await runtime.status(report.id);
      const lines = final.output?.lines.map((line) => line.text) ?? [];
      const ok =
        expected.kind === 'code'
          ? final.state === 'exited' && final.exitCode === expected.code && final.signal === null
          : final.state === 'killed' && final.signal === expected.signal && final.exitCode === null;
      if (!ok) failures.push(`job ${report.id} (#${i}) expected ${JSON.stringify(expected)}, reported: ${final.header}`);
      if (lines.join('|') !== `job-${i}`) {
        const read = final.output === null ? 'no read' : `${final.output.totalLines} lines in its ring`;
        failures.push(`job ${report.id} (#${i}) output is not its own: ${JSON.stringify(lines)} (${read})`);
      }
      if (exited.get(report.id) !== 1) failures.push(`job ${report.id} (#${i}) had ${exited.get(report.id) ?? 0} exited events`);
      if (cleaned.get(report.id) !== 1) failures.push(`job ${report.id} (#${i}) had ${cleaned.get(report.id) ?? 0} cleaned-up events`);
    }
    const orphanFinal = await runtime.status(orphans.id);
    if (orphanFinal.state !== 'exited' || orphanFinal.exitCode !== 42) failures.push(`orphan maker reported: ${orphanFinal.header}`);
    if (!orphanFinal.output?.lines.some((line) => line.text === 'orphaned')) failures.push('the orphan maker did not finish making orphans');
    if (exited.get(orphans.id) !== 1) failures.push(`orphan maker had ${exited.get(orphans.id) ?? 0} exited events`);

    const survivors = marker.survivors();
    if (survivors.length > 0) failures.push(`${survivors.length} marked processes survived`);
    const zombies = zombieChildren(supervisorPid(runtime)!);
    if (zombies.length > 0) failures.push(`zombie children of the supervisor: ${zombies.length}`);

    console.log(`[${mode}] ${JOBS} jobs + ${ORPHANS} orphans: all reported and cleaned up in ${took} ms (marked processes, mostly orphans, alive when the first job exited: ${orphansAtFirst}, when half had: ${orphansAtHalf})`);
    summary(5, JOBS + 1, failures.length, mode);
    expect(failures).toEqual([]);
  });
});
