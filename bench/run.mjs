#!/usr/bin/env node
/**
 * `npm run bench [-- --quick] [--only a,b] [--json FILE]`: measures each figure against its
 * alternatives in the same run and prints min / median / p95 and ratios as a table; goals not met
 * are marked GOAL MISSED. A benchmark, not a test: it asserts nothing and exits 0 when it ran.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_DIR, makeContext, MARKER_PREFIX } from './lib/context.mjs';
import { describeEnvironment, renderEnvironment } from './lib/environment.mjs';
import { killMarked } from './lib/procs.mjs';
import { renderFigure, renderSummary } from './lib/table.mjs';
import * as spawnLatency from './figures/spawn-latency.mjs';
import * as spawnThroughput from './figures/spawn-throughput.mjs';
import * as outputIngest from './figures/output-ingest.mjs';
import * as treeKill from './figures/tree-kill.mjs';
import * as crashCleanup from './figures/crash-cleanup.mjs';
import * as statusRoundTrip from './figures/status-roundtrip.mjs';
import * as supervisorStart from './figures/supervisor-start.mjs';
import * as memory from './figures/memory.mjs';
import * as memorySequence from './figures/memory-sequence.mjs';
import * as locks from './figures/locks.mjs';
import * as streamOrder from './figures/stream-order.mjs';
import * as waitLatency from './figures/wait-latency.mjs';
import * as tokenFigure from './figures/tokens.mjs';
import * as hostCalls from './figures/host-calls.mjs';
import * as limits from './figures/limits.mjs';

const FIGURES = [spawnLatency, spawnThroughput, outputIngest, treeKill, crashCleanup, statusRoundTrip, supervisorStart, memory, memorySequence, locks, streamOrder, waitLatency, tokenFigure, hostCalls, limits];

const USAGE = `usage: npm run bench -- [--quick] [--only ${FIGURES.map((f) => f.id).join(',')}] [--json FILE] [--cpu-prof DIR]
  --quick         short runs (CI smoke, under 2 minutes)
  --only LIST     comma-separated figure ids
  --json FILE     also write the results as JSON
  --cpu-prof DIR  write a V8 CPU profile of every Node process of the run (the bench, each
                  supervisor, the helpers) to DIR; for finding what limits a figure, not for figures`;

function parse() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        quick: { type: 'boolean', default: false },
        only: { type: 'string' },
        json: { type: 'string' },
        'cpu-prof': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    console.error(`${error.message}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const ids = values.only ? values.only.split(',').map((text) => text.trim()).filter(Boolean) : FIGURES.map((f) => f.id);
  const unknown = ids.filter((name) => !FIGURES.some((f) => f.id === name));
  if (unknown.length) {
    console.error(`unknown figure ${unknown.join(', ')}; known: ${FIGURES.map((f) => f.id).join(', ')}`);
    process.exit(2);
  }
  return { quick: values.quick, ids, json: values.json, cpuProf: values['cpu-prof'] };
}

const options = parse();
if (options.cpuProf) {
  // Every Node process started from here on (supervisors included) loads the hook.
  fs.mkdirSync(options.cpuProf, { recursive: true });
  process.env.HEPH_BENCH_PROF_DIR = path.resolve(options.cpuProf);
  const hook = path.join(BENCH_DIR, 'helpers', 'profile-hook.mjs');
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import=${hook}`.trim();
  await import(hook);
}
// The runtime does not keep the event loop alive by itself while we wait for job events.
const keepAlive = setInterval(() => {}, 1 << 30);
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\n${signal}: stopping every process this run started\n`);
    await killMarked(MARKER_PREFIX, 10_000, { prefix: true }).catch((error) => process.stderr.write(`${error.message}\n`));
    process.exit(130);
  });
}

const started = Date.now();
const environment = await describeEnvironment();
console.log(renderEnvironment(environment, options));
console.log('');
const ctx = makeContext({ quick: options.quick });
const figures = [];
for (const [index, module] of FIGURES.entries()) {
  if (!options.ids.includes(module.id)) continue;
  process.stderr.write(`figure ${index + 1} (${module.id})...\n`);
  const figureStart = Date.now();
  let figure;
  try {
    figure = { number: index + 1, id: module.id, title: module.title, ...(await module.run(ctx)) };
  } catch (error) {
    figure = { number: index + 1, id: module.id, title: module.title, groups: [], goals: [], notes: [`FAILED: ${error.stack ?? error}`], failed: true };
  }
  figure.seconds = (Date.now() - figureStart) / 1000;
  figures.push(figure);
  console.log(renderFigure(figure));
  console.log(`   (${figure.seconds.toFixed(1)} s)\n`);
}
await killMarked(MARKER_PREFIX, 10_000, { prefix: true });
const seconds = (Date.now() - started) / 1000;
console.log(renderSummary(figures));
console.log(`bench took ${seconds.toFixed(1)} s`);
if (options.json) {
  fs.writeFileSync(options.json, `${JSON.stringify({ environment, options, seconds, figures }, null, 2)}\n`);
  console.log(`wrote ${options.json}`);
}
clearInterval(keepAlive);
process.exitCode = figures.some((figure) => figure.failed) ? 1 : 0;
