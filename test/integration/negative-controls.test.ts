/**
 * Negative controls: the oracles the other tests rely on must be able to fail. The same escaper
 * fixture, started without a supervisor and with only its leader killed, leaves
 * survivors, and both the FIFO oracle and the /proc scan see them.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EofOracle, isReaped, isRunning, see, waitForFile, waitUntil } from '../helpers/kernel.js';
import { signalIfSame } from '../helpers/signal.js';
import { FIXTURES, tempDir } from '../helpers/runtime.js';
import { readProcStat } from '../../supervisor/platform/procfs.js';

describe('oracles without containment', () => {
  it('see the escapers that survive when only the leader is killed', async () => {
    const oracle = new EofOracle();
    const pids = tempDir();
    const leader = spawn('/bin/sh', ['-c', `${oracle.prefix} exec ${FIXTURES}/escapers.sh`], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, PIDS_DIR: pids },
    });
    const names = ['setsid', 'nohup', 'pgrp'];
    try {
      await Promise.all(names.map((name) => waitForFile(path.join(pids, name))));
      const escapers = names.map((name) => see(Number(fs.readFileSync(path.join(pids, name), 'utf8'))));
      const exited = new Promise((resolve) => leader.once('exit', resolve));
      // What a supervisor without containment does: stop the process it started.
      leader.kill('SIGKILL');
      await exited;
      // Without containment the FIFO stays open and the escapers keep running.
      expect(await oracle.eofWithin(500)).toBe(false);
      expect(escapers.filter((proc) => isRunning(proc.pid)).length).toBe(3);
      // The escapers really left: a new session, and a new process group.
      const [setsid, , pgrp] = escapers.map((proc) => readProcStat(proc.pid)!);
      expect(setsid!.sid).not.toBe(leader.pid);
      expect(pgrp!.pgid).toBe(pgrp!.pid);
      // Clean up by pid and by the leader's process group (only processes this test started:
      // the escapers, and the fixture's own last sleep), then the oracle must see EOF.
      for (const proc of escapers) signalIfSame(proc, 'SIGKILL');
      try {
        process.kill(-leader.pid!, 'SIGKILL');
      } catch {
        // the group is already empty
      }
      await oracle.waitEof(5000);
      await waitUntil(() => escapers.every(isReaped), 'escapers reaped');
    } finally {
      try {
        process.kill(-leader.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      oracle.dispose();
    }
  });
});
