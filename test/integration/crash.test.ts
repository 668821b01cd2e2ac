/**
 * Crash safety: the runtime SIGKILLed while jobs run (the supervisor stops everything and exits),
 * and the supervisor SIGKILLed (the runtime marks jobs lost and stops what is left).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { EofOracle, isReaped, see, waitForFile, waitUntil, type SeenProcess } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, startRuntime, tempDir, waitForOutput } from '../helpers/runtime.js';
import { killSupervisor, settledLostCleanups, supervisorInstance, supervisorPid, waitFor } from '../../src/testing.js';

interface HostInfo {
  supervisorPid: number;
  cgroupRoot: string | null;
  jobs: { id: number; pid: number }[];
}

describe.each(modeRows())('crash safety (%s)', (mode, skip) => {
  it.skipIf(skip)('a runtime killed with SIGKILL leaves no process, zombie or cgroup behind', async () => {
    const oracle = new EofOracle();
    const pids = tempDir();
    const host = spawn(
      process.execPath,
      [
        path.join(FIXTURES, 'runtime-host.mjs'),
        mode,
        `${oracle.prefix} exec ${FIXTURES}/escapers.sh`,
        `${oracle.prefix} exec ${FIXTURES}/ignore-term.sh`,
        `${oracle.prefix} exec sleep 1000`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, PIDS_DIR: pids } },
    );
    try {
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: host.stdout! }).once('line', resolve);
        host.once('exit', (code) => reject(new Error(`runtime host exited early with ${code}`)));
      });
      const info = JSON.parse(line) as HostInfo;
      await Promise.all(['setsid', 'nohup', 'pgrp'].map((name) => waitForFile(path.join(pids, name))));
      const seen: SeenProcess[] = [
        see(info.supervisorPid),
        ...info.jobs.map((job) => see(job.pid)),
        ...['setsid', 'nohup', 'pgrp'].map((name) => see(Number(fs.readFileSync(path.join(pids, name), 'utf8')))),
      ];
      host.kill('SIGKILL');
      await oracle.waitEof(10_000);
      await waitUntil(() => seen.every(isReaped), 'the supervisor and every job process reaped', 10_000, () =>
        seen.filter((proc) => !isReaped(proc)),
      );
      if (mode === 'cgroup') {
        expect(info.cgroupRoot).not.toBeNull();
        expect(fs.existsSync(info.cgroupRoot!)).toBe(false);
      }
    } finally {
      host.kill('SIGKILL');
      oracle.dispose();
    }
  });

  it.skipIf(skip)('a supervisor killed with SIGKILL: jobs become lost, what is left is stopped, a new supervisor starts', async () => {
    const runtime = await startRuntime(mode);
    const oracle = new EofOracle();
    const pids = tempDir();
    try {
      const job = await runtime.background({ command: `${oracle.prefix} exec ${FIXTURES}/escapers.sh`, env: { ...process.env, PIDS_DIR: pids } });
      await waitForOutput(runtime, job.id, 'ready');
      const escapers = ['setsid', 'nohup', 'pgrp'].map((name) => see(Number(fs.readFileSync(path.join(pids, name), 'utf8'))));
      const oldSupervisor = see(supervisorPid(runtime)!);
      const oldInstance = supervisorInstance(runtime);
      const cgroupRoot = (await runtime.capabilities()).containment.cgroupRoot;
      killSupervisor(runtime, 'SIGKILL');
      await waitFor(runtime, () => runtime.list()[0]?.state === 'lost', 10_000);
      await settledLostCleanups(runtime);
      await oracle.waitEof(10_000);
      await waitUntil(() => [...escapers, oldSupervisor].every(isReaped), 'escapers and old supervisor reaped', 10_000);
      const lost = await runtime.status(job.id);
      expect(lost.state).toBe('lost');
      expect(lost.text).toContain('its supervisor died');
      if (cgroupRoot) expect(fs.existsSync(cgroupRoot)).toBe(false);
      // The next call starts a fresh supervisor.
      const next = await runtime.background({ command: 'echo again' });
      // By instance: the new supervisor may have the dead one's pid.
      expect(supervisorInstance(runtime)).not.toBe(oldInstance);
      await waitFor(runtime, () => runtime.list().find((entry) => entry.id === next.id)?.cleanedUp === true, 10_000);
      expect((await runtime.status(next.id)).output?.lines.map((line) => line.text)).toEqual(['again']);
    } finally {
      oracle.dispose();
    }
  });
});
