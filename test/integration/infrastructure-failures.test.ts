/**
 * Issue 28, item 11 (the runtime's part): a job refused by a limit of the machine says so, and
 * what to do, instead of "Fix the command or its working directory"; a supervisor killed by a
 * signal (SIGKILL, as the out-of-memory killer sends) is said to have been killed by it, not to
 * have "closed the channel". The limit is real: the subtree's cgroup.max.descendants, whose mkdir
 * refusal is EAGAIN, as a pids limit's fork refusal is.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createTools } from '../../src/index.js';
import { isReaped, see, waitUntil } from '../helpers/kernel.js';
import { cgroupUnavailable } from '../helpers/modes.js';
import { startRuntime } from '../helpers/runtime.js';
import { killSupervisor, supervisorPid, waitFor } from '../../src/testing.js';

describe('failures that are the machine\'s, not the command\'s', () => {
  it.skipIf(cgroupUnavailable !== null)('a job refused by a cgroup limit (EAGAIN) says it is a limit and what to do', async () => {
    const runtime = await startRuntime('cgroup');
    const tools = createTools(runtime, { approve: async () => 'once' });
    const first = await runtime.background({ command: 'exec sleep 1000' });
    expect(first.state).toBe('running');
    const root = (await runtime.capabilities()).containment.cgroupRoot!;
    // Room for the cgroup of the job now and the one made ahead for the next: no more.
    fs.writeFileSync(`${root}/cgroup.max.descendants`, '2');
    await runtime.background({ command: 'exec sleep 1000' });
    const refused = await tools.background.run({ command: 'exec sleep 1000' });
    const lines = refused.split('\n');
    expect(lines[0]).toMatch(/^job \d+ failed /);
    expect(refused).not.toContain('Fix the command');
    expect(lines.at(-1)).toMatch(/a limit of the machine \(EAGAIN: /);
    expect(lines.at(-1)).toMatch(/not a fault of the command/);
    expect(lines.at(-1)).toMatch(/job_kill/);
    const report = await runtime.background({ command: 'exec sleep 1000' });
    expect(report).toMatchObject({ state: 'failed', limit: 'EAGAIN' });
  });

  it('negative control: a command that cannot start is still the command\'s to fix', async () => {
    const runtime = await startRuntime('process-group');
    const report = await runtime.background({ command: 'true', cwd: '/nonexistent-heph-dir' }).catch((error: Error) => ({ text: error.message, limit: undefined }));
    expect(report.text).toMatch(/Fix the command or its working directory|does not exist/);
    expect(report.limit).toBeUndefined();
  });

  it('a supervisor killed by SIGKILL is said to be killed by it, not to have closed the channel', async () => {
    const runtime = await startRuntime('process-group');
    const job = await runtime.background({ command: 'exec sleep 1000' });
    const supervisor = see(supervisorPid(runtime)!);
    killSupervisor(runtime, 'SIGKILL');
    await waitUntil(() => isReaped(supervisor), 'the supervisor to be gone');
    expect(await waitFor(runtime, () => runtime.list().find((entry) => entry.id === job.id)?.state === 'lost', 10_000)).toBe(true);
    const lost = await runtime.status(job.id);
    expect(lost.reason).toContain('was killed by SIGKILL');
    expect(lost.reason).toMatch(/out-of-memory/);
    expect(lost.reason).not.toContain('closed the channel');
  });
});
