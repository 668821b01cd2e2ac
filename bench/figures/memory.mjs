/**
 * Figure 8, memory: the supervisor's resident set (VmRSS from /proc) idle after start, and while
 * 8 jobs flood output as fast as they can (4 with 80-byte lines, 4 with 16 KiB lines, which the
 * ring cuts at 8 KiB); the peak is VmHWM at the end of the flood.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { JobRuntime } from '../../dist/src/index.js';
import { SUPERVISOR_NODE_FLAGS, supervisorEnvironment } from '../../dist/src/runtime/supervisor-client.js';
import { goal, group, row } from '../lib/report.mjs';
import { memoryOf, sleep } from '../lib/procs.mjs';

export const id = 'memory';
export const title = 'memory: supervisor RSS idle, and with 8 jobs flooding output';

const MB = 1e6;
const mb = (bytes) => `${(bytes / MB).toFixed(1)} MB`;
const SAMPLE_MS = 100;
const flood = (lineBytes) => `exec yes "$(printf '%${lineBytes - 1}s' '' | tr ' ' x)"`;

async function sampleRss(pid, ms) {
  const samples = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    samples.push(memoryOf(pid).rss / MB);
    await sleep(SAMPLE_MS);
  }
  return samples;
}

/** Resident bytes that are the process's own (RssAnon) and mapped files' (RssFile: mostly the node binary, shared). */
function residentParts(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'latin1');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  return { anon: field('RssAnon'), file: field('RssFile') };
}

/** The floor: a bare Node process (the supervisor's flags and environment) idling, its VmRSS. */
async function bareNode(ms) {
  const child = spawn(process.execPath, [...SUPERVISOR_NODE_FLAGS, '-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', env: supervisorEnvironment(process.env) });
  try {
    await sleep(500);
    return { samples: await sampleRss(child.pid, ms), parts: residentParts(child.pid) };
  } finally {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
}

export async function run(ctx) {
  const runtime = await JobRuntime.start({ settleMs: 0 });
  try {
    const { supervisorPid } = await runtime.capabilities();
    await sleep(500);
    const idle = await sampleRss(supervisorPid, ctx.runs(2000, 1000));
    const idleParts = residentParts(supervisorPid);
    const bare = await bareNode(ctx.runs(2000, 300));
    const jobs = [];
    for (let i = 0; i < 8; i++) jobs.push(await runtime.background({ command: flood(i < 4 ? 80 : 16 * 1024) }));
    const flooding = await sampleRss(supervisorPid, ctx.runs(15_000, 4000));
    const { hwm } = memoryOf(supervisorPid);
    const floodParts = residentParts(supervisorPid);
    const states = await Promise.all(jobs.map((job) => runtime.status(job.id, { lines: 1 })));
    const running = states.filter((report) => report.state === 'running').length;
    await Promise.all(jobs.map((job) => runtime.kill(job.id, { signal: 'KILL' })));
    const g = group('', [
      row('supervisor idle (VmRSS)', idle, { unit: 'MB' }),
      row('supervisor, 8 jobs flooding (VmRSS)', flooding, { unit: 'MB', ours: true }),
      row('peak during the flood (VmHWM)', [hwm / MB], { unit: 'MB' }),
      row('bare node idle, same flags and environment (VmRSS)', bare.samples, { unit: 'MB' }),
    ]);
    // A ratio against idle says nothing here; drop it.
    for (const entry of g.rows) delete entry.ratio;
    return {
      groups: [g],
      goals: [goal('≤ 60 MB flooding (peak, VmHWM)', hwm / MB, '<=', 60, (value) => `${value.toFixed(1)} MB`)],
      notes: [
        `${running} of 8 flood jobs were still running when sampling ended; RSS sampled every ${SAMPLE_MS} ms; MB = 10^6 bytes`,
        `resident, own (RssAnon) + mapped files (RssFile, mostly the node binary's pages, shared with every Node process): bare node ${mb(bare.parts.anon)} + ${mb(bare.parts.file)}, supervisor idle ${mb(idleParts.anon)} + ${mb(idleParts.file)}, flooding ${mb(floodParts.anon)} + ${mb(floodParts.file)}`,
        `the floor of the flood: bare node plus what the rings must keep (4 jobs × ${mb(4 * 1024 * 1024)} of cut 16 KiB lines, 4 × 2000 lines of 80 B): about ${mb(bare.parts.anon + bare.parts.file + 4 * 4 * 1024 * 1024 + 4 * 2000 * 80)}`,
      ],
    };
  } finally {
    await runtime.close();
  }
}
