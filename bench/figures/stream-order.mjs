/**
 * Stream order: a job writes a burst of 400 lines as fast as a shell loop can (one write(2) per
 * line, builtins only), every 50th to stderr and the rest to stdout, each line naming its place;
 * once at the job's start (the supervisor still busy with the spawn) and once 50 ms in (the
 * supervisor idle, as when a build fails midway). The figure is the displacement of each stderr
 * line: how many lines away from its place it was read (0: exact). Two pipes carry no order
 * between them: what both hold when the supervisor reads is ordered by a rule (a stderr line never
 * before a stdout line written before it; the count of such "early" lines is shown, and must be 0),
 * so the displacement is as small as the supervisor's read latency makes it. `merge` and `tty` are
 * one stream and exact, measured as the floor. Against: Node's child_process reading the same two
 * pipes ('data' events), in the same run.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { JobRuntime } from '../../dist/src/index.js';
import { JobEvents } from '../lib/job-events.mjs';
import { goal, group, row } from '../lib/report.mjs';

export const id = 'stream-order';
export const title = 'stream order: where a stderr line lands in a burst of stdout lines';

const LINES = 400;
const EVERY = 50;
const BURST =
  `i=0; while [ $i -lt ${LINES} ]; do i=$((i+1)); ` +
  `if [ $((i % ${EVERY})) -eq 0 ]; then echo "e $i" >&2; else echo "o $i"; fi; done`;

/** Signed displacement (read index - written index) of every stderr line; negative: early. */
function displacements(texts) {
  const out = [];
  for (const [index, text] of texts.entries()) {
    const match = /^e (\d+)$/.exec(text);
    if (match) out.push(index - (Number(match[1]) - 1));
  }
  if (out.length !== LINES / EVERY || texts.length !== LINES) throw new Error(`burst read ${texts.length} lines, ${out.length} from stderr`);
  return out;
}

export async function run(ctx) {
  const rounds = ctx.runs(40, 8);
  const runtime = await JobRuntime.start({ settleMs: 0 });
  const events = new JobEvents(runtime);
  const ours = (prefix, options) => async () => {
    const report = await runtime.background({ command: prefix + BURST, ...options });
    await events.wait('cleaned-up', report.id);
    events.forget(report.id);
    const read = await runtime.status(report.id, { lines: LINES });
    return displacements(read.output.lines.map((line) => line.text));
  };
  const nodePipes = (prefix) => async () => {
    const child = spawn('/bin/sh', ['-c', prefix + BURST], { stdio: ['ignore', 'pipe', 'pipe'] });
    const texts = [];
    const pending = { stdout: '', stderr: '' };
    for (const name of ['stdout', 'stderr']) {
      child[name].on('data', (chunk) => {
        const parts = (pending[name] + chunk.toString()).split('\n');
        pending[name] = parts.pop();
        texts.push(...parts);
      });
    }
    await once(child, 'close');
    return displacements(texts);
  };
  const groups = [];
  const goals = [];
  const notes = [];
  const progress = ctx.progress(id);
  try {
    await runtime.capabilities();
    for (const [label, prefix] of [
      ['at the start', ''],
      ['50 ms in', 'sleep 0.05; '],
    ]) {
      const cases = [
        ['stdout and stderr apart (default)', ours(prefix, {}), true],
        ['merge: true (one pipe)', ours(prefix, { merge: true }), false],
        ['tty: true (one terminal)', ours(prefix, { tty: true }), false],
        ['Node child_process, two pipes', nodePipes(prefix), false],
      ];
      const samples = new Map(cases.map(([name]) => [name, []]));
      for (let round = 0; round < rounds; round++) {
        for (const [name, fn] of cases) samples.get(name).push(...(await fn()));
        progress(groups.length * rounds + round + 1, 2 * rounds);
      }
      const rows = cases.map(([name, , isOurs]) => row(name, samples.get(name).map(Math.abs), { unit: 'lines', ours: isOurs }));
      const g = group(`burst ${label}: |displacement| of each stderr line (${LINES / EVERY} per burst of ${LINES}, ${rounds} bursts)`, rows);
      // Displacements are compared by their values; a ratio of two medians of 0 means nothing.
      for (const entry of g.rows) delete entry.ratio;
      groups.push(g);
      const lines = (value) => `${value} lines`;
      const early = (name) => samples.get(name).filter((value) => value < 0).length;
      goals.push(goal(`${label}, one stream (merge, tty): exact, worst 0`, Math.max(rows[1].max, rows[2].max), '<=', 0, lines));
      goals.push(goal(`${label}, apart: no stderr line early`, early(cases[0][0]), '<=', 0, (value) => `${value} early`));
      notes.push(
        `${label}, apart: median ${rows[0].median}, worst ${rows[0].max} lines (late); Node's two pipes: median ${rows[3].median}, worst ${rows[3].max}, ${early(cases[3][0])} early`,
      );
    }
  } finally {
    await runtime.close();
  }
  return { groups, goals, notes };
}
