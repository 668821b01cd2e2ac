/**
 * Issue 28, item 6: lock files and their descriptors are bounded per lease, and the lock files a
 * release leaves unused are removed. Kernel truth: the lock directory's entries and the
 * supervisor's /proc/PID/fd. Removal never breaks exclusion: two runtimes (two supervisors, so
 * only the kernel's OFD locks exclude them) take one resource in turn, and a job that finds the
 * other's mark says so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/kernel.js';
import { startRuntime, tempDir } from '../helpers/runtime.js';
import { waitFor } from '../../src/testing.js';
import type { JobRuntime } from '../../src/index.js';

/** The lock files in `dir` (and below, wherever the runtime puts them). */
function lockFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((name) => name.endsWith('.lock'));
}

function openFdCount(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

async function cleanedUp(runtime: JobRuntime, id: number): Promise<void> {
  const done = await waitFor(runtime, () => runtime.list().find((job) => job.id === id)?.cleanedUp === true, 20_000);
  if (!done) throw new Error(`job ${id} was not cleaned up`);
}

describe('lock files per lease (issue 28, item 6)', () => {
  it('32 deep path locks in one call are refused with a clear error; no lock file is made', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const runtime = await startRuntime('process-group', { lockDir });
    const supervisor = (await runtime.capabilities()).supervisorPid!;
    const before = openFdCount(supervisor);
    // Each within the schema (at most 1024 characters), 501 levels deep, sharing only `/`.
    const locks = Array.from({ length: 32 }, (_, i) => `path:/d${String(i).padStart(2, '0')}${'/x'.repeat(500)}`);
    const outcome = await runtime.background({ command: 'echo ran', locks }).then(
      (report) => ({ report }),
      (error: { code?: string; message: string }) => ({ error }),
    );
    // The job never ran: its report says why, and what is accepted.
    expect('report' in outcome ? outcome.report.state : outcome.error.message).toBe('failed');
    const message = 'report' in outcome ? outcome.report.text : '';
    expect(message).not.toContain('> ran');
    expect(message).toMatch(/these locks need 16033 lock files/);
    expect(message).toMatch(/at most \d+ lock files/);
    expect(message.split('\n').at(-1)).toMatch(/Nothing of it ran; change its locks, then call background again\.$/);
    expect(lockFiles(lockDir)).toEqual([]);
    expect(openFdCount(supervisor)).toBeLessThan(before + 16);

    // The runtime goes on: a lease within the bound is granted, and its files go with its release.
    const fine = await runtime.background({ command: 'echo ran', locks: [`path:/d00${'/x'.repeat(20)}`] });
    await cleanedUp(runtime, fine.id);
    expect((await runtime.status(fine.id)).text).toContain('> ran');
  });

  it('a release removes the lock files no other lease uses; shared ancestors stay while used', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const root = tempDir();
    const runtime = await startRuntime('process-group', { lockDir });
    const a = await runtime.background({ command: 'exec sleep 1000', locks: [`path:${root}/a`, 'port:6101'] });
    const b = await runtime.background({ command: 'exec sleep 1000', locks: [`path:${root}/b`] });
    const levels = root.split('/').length; // `/` and each level of root
    // Negative control: while both are held, every file is there (the oracle can see them).
    const held = lockFiles(lockDir);
    expect(held.length).toBe(levels + 3);
    await runtime.kill(a.id);
    await cleanedUp(runtime, a.id);
    await waitUntil(() => lockFiles(lockDir).length === levels + 1, 'job a\'s own lock files to go', 10_000, () => lockFiles(lockDir));
    expect(lockFiles(lockDir).some((name) => name.startsWith('port_6101'))).toBe(false);
    await runtime.kill(b.id);
    await cleanedUp(runtime, b.id);
    await waitUntil(() => lockFiles(lockDir).length === 0, 'every lock file to go', 10_000, () => lockFiles(lockDir));
  });

  it('lock files removed at each release never let two runtimes hold one resource at once', async () => {
    const lockDir = path.join(tempDir(), 'locks');
    const shared = tempDir();
    const mark = path.join(shared, 'held');
    const runtimes = [await startRuntime('process-group', { lockDir }), await startRuntime('process-group', { lockDir })];
    // The mark is made atomically (mkdir) and removed by its maker: finding it means an overlap.
    const command = `mkdir ${mark} 2>/dev/null || echo OVERLAP; sleep 0.01; rmdir ${mark}`;
    const ROUNDS = 25;
    const outputs = await Promise.all(
      runtimes.map(async (runtime) => {
        const texts: string[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          const report = await runtime.background({ command, locks: [`path:${shared}/resource`], waitMs: 20_000 });
          texts.push(report.text);
        }
        return texts;
      }),
    );
    const all = outputs.flat();
    expect(all.filter((text) => text.includes('> OVERLAP'))).toEqual([]);
    expect(all.filter((text) => !text.includes('exited 0'))).toEqual([]);
    await waitUntil(() => lockFiles(lockDir).length === 0, 'every lock file to go', 10_000, () => lockFiles(lockDir));

    // Negative control: the same jobs without the lock, at once, do find each other's mark.
    const unlocked = await Promise.all(runtimes.map((runtime) => runtime.background({ command: command.replace('sleep 0.01', 'sleep 1'), waitMs: 20_000 })));
    expect(unlocked.filter((report) => report.text.includes('> OVERLAP')).length).toBeGreaterThan(0);
  }, 120_000);
});
