/**
 * Which Node a test run uses is certain: the supervisor is the runtime's own Node
 * (process.execPath), read from the kernel as /proc/<pid>/exe. `.ci/run` runs the suite on other
 * Node lines with that line's binary first on PATH and names it in HEPH_CI_NODE; then the test
 * runner and a job's `node` must be it too. The negative control reads a `sleep` the test starts
 * the same way and must not see Node, so the oracle tells binaries apart.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { JobRuntime } from '../../src/index.js';
import { supervisorPid } from '../../src/testing.js';
import { startAutoRuntime, waitForOutput } from '../helpers/runtime.js';

const CI_NODE = process.env.HEPH_CI_NODE;
const expected = fs.realpathSync(CI_NODE ?? process.execPath);


/** What a job printed after `marker=` (its first such output line). */
async function printed(runtime: JobRuntime, command: string, marker: string): Promise<string> {
  const job = await runtime.background({ command });
  await waitForOutput(runtime, job.id, `${marker}=`);
  const lines = (await runtime.status(job.id, { lines: 100 })).output!.lines.map((line) => line.text);
  return lines.find((line) => line.startsWith(`${marker}=`))!.slice(marker.length + 1);
}

describe(`the Node a test run uses: ${expected} (Node ${process.versions.node})`, () => {
  it.runIf(CI_NODE)('is the one HEPH_CI_NODE names (.ci/run)', () => {
    expect(fs.realpathSync(process.execPath)).toBe(expected);
  });

  it("the supervisor runs on the runtime's Node", async () => {
    const runtime = await startAutoRuntime();
    await runtime.background({ command: 'true' }); // the supervisor starts with the first job
    const pid = supervisorPid(runtime);
    expect(pid).not.toBeNull();
    expect(fs.readlinkSync(`/proc/${pid}/exe`)).toBe(expected);
  });

  it.runIf(CI_NODE)("a job's `node` (PATH) is that Node too", async () => {
    const runtime = await startAutoRuntime();
    expect(fs.realpathSync(await printed(runtime, `node -e 'console.log("exe=" + process.execPath)'`, 'exe'))).toBe(expected);
  });

  it('negative control: a sleep reads as sleep, not Node', async () => {
    // spawn returns once the exec succeeded (libuv waits for it), so /proc/<pid>/exe is sleep's.
    const sleeper = spawn('sleep', ['1000'], { stdio: 'ignore' });
    const exited = once(sleeper, 'exit');
    try {
      const exe = fs.readlinkSync(`/proc/${sleeper.pid}/exe`);
      expect(exe).toBe(fs.realpathSync('/bin/sleep'));
      expect(exe).not.toBe(expected);
    } finally {
      sleeper.kill('SIGKILL');
      await exited;
    }
  });
});
