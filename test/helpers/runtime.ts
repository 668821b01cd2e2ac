/** Starting runtimes in a given containment mode, and cleaning them up after each test. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { JobRuntime, type JobRuntimeOptions } from '../../src/index.js';
import type { Mode } from './modes.js';
import { waitFor } from '../../src/testing.js';

export const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');

const open: JobRuntime[] = [];
const tempDirs: string[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((runtime) => runtime.close()));
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A runtime closed after the test (which stops all its jobs and its supervisor). */
export async function startRuntime(mode: Mode, options: JobRuntimeOptions = {}): Promise<JobRuntime> {
  const runtime = await JobRuntime.start({ containment: mode, settleMs: 100, killGraceMs: 1000, ...options });
  open.push(runtime);
  return runtime;
}

/** A runtime as a host starts one (containment detected, no settle window), closed after the test. */
export async function startAutoRuntime(): Promise<JobRuntime> {
  const runtime = await JobRuntime.start({ settleMs: 0 });
  open.push(runtime);
  return runtime;
}

export function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-'));
  tempDirs.push(dir);
  return dir;
}

/** Waits until the job's output contains `text` (re-reading on each job event or every 20 ms). */
export async function waitForOutput(runtime: JobRuntime, id: number, text: string, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const report = await runtime.status(id, { lines: 2000 });
    last = report.text;
    if (report.output?.lines.some((line) => line.text.includes(text))) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for "${text}" in job ${id}; last report:\n${last}`);
    await waitFor(runtime, () => false, 20);
  }
}
