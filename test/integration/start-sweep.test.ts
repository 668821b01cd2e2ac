/**
 * Item 9 of issue 12: a runtime and its supervisor SIGKILLed together (an OOM kill takes both)
 * leave their jobs running and their cgroup subtree behind, with no one left to clean up. The
 * next supervisor to start sweeps what dead instances left, and never touches a live instance's
 * jobs. Both are frozen (SIGSTOP) before the SIGKILL, so neither gets to act: exactly "killed
 * together".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EofOracle, isReaped, isRunning, see, waitForFile, waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir } from '../helpers/runtime.js';
import { supervisorHello } from '../../src/testing.js';
import { firstLine, killTogether } from '../helpers/host.js';

interface HostInfo {
  supervisorPid: number;
  cgroupRoot: string | null;
  jobs: { id: number; pid: number }[];
}

/** A runtime in its own process (test/fixtures/runtime-host.mjs) running `commands`. */
async function runtimeHost(mode: string, commands: string[], env: NodeJS.ProcessEnv): Promise<{ host: ChildProcess; info: HostInfo }> {
  const host = spawn(process.execPath, [path.join(FIXTURES, 'runtime-host.mjs'), mode, ...commands], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const line = await firstLine(host, 'runtime host');
  return { host, info: JSON.parse(line) as HostInfo };
}

describe.each(modeRows())('the sweep when a supervisor starts (%s)', (mode, skip) => {
  it.skipIf(skip)('stops what a runtime and supervisor killed together left, and spares a live instance\'s jobs', async () => {
    const live = await startRuntime(mode);
    const liveJob = await live.background({ command: 'exec sleep 1000' });
    const liveLeader = see(liveJob.pid!);
    const liveRoot = supervisorHello(live)!.containment.cgroupRoot;

    const oracle = new EofOracle();
    const pids = tempDir();
    const { host, info } = await runtimeHost(mode, [`${oracle.prefix} exec ${FIXTURES}/escapers.sh`, `${oracle.prefix} exec sleep 1000`], { PIDS_DIR: pids });
    try {
      await Promise.all(['setsid', 'nohup', 'pgrp'].map((name) => waitForFile(path.join(pids, name))));
      const supervisor = see(info.supervisorPid);
      // The escapers and the second job's leader write nothing (the first leader may die of a
      // SIGPIPE once the supervisor, its stdout's reader, is gone).
      const leftovers = [see(info.jobs[1]!.pid), ...['setsid', 'nohup', 'pgrp'].map((name) => see(Number(fs.readFileSync(path.join(pids, name), 'utf8'))))];
      // The oracles can fail: while the processes run the FIFO has no EOF, the subtree is there.
      expect(await oracle.eofWithin(300)).toBe(false);
      expect(leftovers.every((proc) => !isReaped(proc))).toBe(true);
      if (mode === 'cgroup') expect(fs.existsSync(info.cgroupRoot!)).toBe(true);
      await killTogether(host, supervisor);

      // The next supervisor to start sweeps it. (Any supervisor of this user that starts now, a
      // parallel test's included, may be the one: what it left is not checked again here, as
      // that would race them; with the sweep disabled this test fails at the EOF below.)
      const next = await startRuntime(mode);
      await next.capabilities();
      await oracle.waitEof(10_000);
      await waitUntil(() => leftovers.every(isReaped), 'every leftover reaped', 10_000, () => leftovers.filter((proc) => !isReaped(proc)));
      if (mode === 'cgroup') await waitUntil(() => !fs.existsSync(info.cgroupRoot!), `${info.cgroupRoot} removed`);

      // The live instance's job was not touched, and its runtime can still start jobs.
      expect(isRunning(liveLeader.pid) && !isReaped(liveLeader)).toBe(true);
      expect((await live.status(liveJob.id)).state).toBe('running');
      if (liveRoot !== null) expect(fs.existsSync(liveRoot)).toBe(true);
      const again = await live.background({ command: 'echo again' });
      expect(again.state === 'running' || again.state === 'exited').toBe(true);
    } finally {
      host.kill('SIGKILL');
      oracle.dispose();
    }
  });
});
