/**
 * Scenario 11 of the hardening issue: slow readers and floods. One job writes 2 GB of output as
 * fast as it can while another is read with `status(id, { waitMs, until })`: each wait returns as
 * soon as its line appears, the flood is never slowed into a stall (it finishes its fixed volume),
 * a slow cursor reader of the flood is told what it missed, and the supervisor's peak memory
 * (VmHWM) stays bounded.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { JobReport } from '../../src/index.js';
import { summary, within } from '../helpers/hardening.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, waitForOutput } from '../helpers/runtime.js';
import { supervisorPid as supervisorPidOf, waitFor } from '../../src/testing.js';

const FLOOD_LINES = 20_000_000;
const NEEDLES = 10;
/** Generous: a wait answered this late is a hang, not noise. */
const NEEDLE_DEADLINE_MS = 30_000;
const MAX_SUPERVISOR_HWM_KB = 400 * 1024;

function vmHwmKb(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(match[1]);
}

describe.each(modeRows())('slow readers and floods (%s)', (mode, skip) => {
  it.skipIf(skip)('a waiting reader is answered at once while another job floods, and memory stays bounded', async () => {
    const runtime = await startRuntime(mode);
    const failures: string[] = [];
    const reader = await runtime.background({ command: `exec ${FIXTURES}/echo-stdin.sh`, stdin: true });
    await waitForOutput(runtime, reader.id, 'ready');
    const flood = await runtime.background({ command: `LINES=${FLOOD_LINES} exec ${FIXTURES}/flood.sh` });
    const supervisorPid = supervisorPidOf(runtime)!;
    const floodRunning = () => runtime.list().find((job) => job.id === flood.id)?.state === 'running';

    // A slow cursor reader of the flood: reads a little now and then, and must be told what it missed.
    let readerDone = false;
    let slowReads = 0;
    let missedReported = 0;
    const slowReader = (async () => {
      let since: number | undefined = 0;
      while (!readerDone) {
        const read = await runtime.status(flood.id, { since, maxBytes: 4096 });
        slowReads++;
        if ((read.output?.dropped ?? 0) > 0 && /since the last read (is|are) gone/.test(read.text)) missedReported++;
        since = read.output?.next ?? since;
        await waitFor(runtime, () => false, 50);
      }
    })();

    const latencies: number[] = [];
    let duringFlood = 0;
    for (let k = 0; k < NEEDLES; k++) {
      const until = `^got needle-${k}$`;
      let waiting: Promise<JobReport>;
      let sent: number;
      if (k % 2 === 0) {
        // The wait is asked for first, then the line is caused: "from now on" is from the call.
        waiting = runtime.status(reader.id, { waitMs: 600_000, until });
        sent = Date.now();
        await runtime.input(reader.id, { text: `needle-${k}\n` });
      } else {
        // A cursor taken first, the line caused, then a wait for it from the cursor on.
        const cursor = (await runtime.status(reader.id, { lines: 0 })).output!.next;
        sent = Date.now();
        await runtime.input(reader.id, { text: `needle-${k}\n` });
        waiting = runtime.status(reader.id, { since: cursor, waitMs: 600_000, until });
      }
      const report = await within(waiting, NEEDLE_DEADLINE_MS, `the wait for needle-${k}`);
      latencies.push(Date.now() - sent);
      if (floodRunning()) duringFlood++;
      if (!report.text.includes(`a line matched /^got needle-${k}$/`)) failures.push(`needle ${k}: the wait ended without its line:\n${report.text}`);
    }

    const ended = await waitFor(runtime, () => runtime.list().find((job) => job.id === flood.id)?.cleanedUp === true, 120_000);
    readerDone = true;
    await slowReader;
    const final = await runtime.status(flood.id, { lines: 1 });
    if (!ended || final.state !== 'exited' || final.exitCode !== 0) failures.push(`the flood did not finish its volume: ${final.header}`);
    if (final.output?.lines.at(-1)?.text !== 'flood-done') failures.push(`the flood's last line is not flood-done: ${final.text}`);
    if ((final.output?.totalLines ?? 0) !== FLOOD_LINES + 1) failures.push(`the flood's ring counted ${final.output?.totalLines} lines, not ${FLOOD_LINES + 1}`);
    if (missedReported === 0) failures.push(`the slow reader (${slowReads} reads) was never told that lines were gone`);
    const hwm = vmHwmKb(supervisorPid);
    if (hwm > MAX_SUPERVISOR_HWM_KB) failures.push(`supervisor VmHWM ${hwm} kB exceeds ${MAX_SUPERVISOR_HWM_KB} kB`);

    console.log(
      `[${mode}] flood of ${FLOOD_LINES} lines; needle waits answered in ${latencies.join(', ')} ms (${duringFlood} of ${NEEDLES} while the flood ran); ` +
        `slow reader: ${slowReads} reads, told of missed lines ${missedReported} times; supervisor VmHWM ${Math.round(hwm / 1024)} MiB`,
    );
    summary(11, NEEDLES, failures.length, mode);
    expect(failures).toEqual([]);
  });
});
