/** What the figures were measured on: printed above the table and kept in the JSON. */
import fs from 'node:fs';
import os from 'node:os';
import { JobRuntime } from '../../dist/src/index.js';
import { findOwnCgroupDir } from '../../dist/supervisor/platform/cgroup.js';

export async function describeEnvironment() {
  const runtime = await JobRuntime.start();
  let containment;
  try {
    const caps = await runtime.capabilities();
    containment = { mode: caps.containment.mode, reason: caps.containment.reason, subreaper: caps.subreaper };
  } finally {
    await runtime.close();
  }
  const probe = findOwnCgroupDir();
  const cpus = os.cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    kernel: `${os.release()} ${os.version()}`,
    cpu: `${cpus[0]?.model ?? 'unknown'} × ${cpus.length}`,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    loadavg: os.loadavg().map((value) => value.toFixed(2)).join(' '),
    containment,
    rawCgroupParent: probe.ok ? probe.parent : `none (${probe.reason})`,
    pid1: fs.readFileSync('/proc/1/comm', 'utf8').trim(),
    date: new Date().toISOString(),
  };
}

export function renderEnvironment(env, options) {
  return [
    `heph-jobs bench (${options.quick ? 'quick' : 'full'} run) ${env.date}`,
    `  node ${env.node} (V8 ${env.v8}); kernel ${env.kernel}`,
    `  cpu ${env.cpu}; memory ${env.memory}; load ${env.loadavg}; pid 1 is ${env.pid1}`,
    `  containment in use: ${env.containment.mode} (${env.containment.reason}); subreaper ${env.containment.subreaper}`,
    `  cgroup for the raw alternatives: ${env.rawCgroupParent}`,
    '  ratios compare medians measured in this run; "ours ÷ this" below 1× time or above 1× rate is ours ahead',
  ].join('\n');
}
