/**
 * The environment a job gets is the call's, as it is at the call: the runtime's process.env read
 * live (a variable set, changed or deleted after the supervisor started reaches the next job
 * exactly so), or the call's own `env` whole (variables it leaves out are not inherited). The
 * supervisor keeps a base environment and spawns carry only differences from it
 * (src/runtime/job-environment.ts): these tests hold that to what the kernel says the job's shell
 * was started with (/proc/PID/environ of the shell, blocked in `read` on its stdin pipe: no second
 * exec, and the shell's own additions such as PWD are not in that block), across a base change, a
 * call of its own, many differences at once, and a new supervisor that holds no base yet.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobRuntime } from '../../src/index.js';
import { envEntries } from '../../src/runtime/input-checks.js';
import { killSupervisor, supervisorPid, waitFor } from '../../src/testing.js';
import { modeRows } from '../helpers/modes.js';
import { startRuntime, waitForOutput } from '../helpers/runtime.js';

const NAME = 'HEPH_TEST_LIVE_VAR';
const MANY = Array.from({ length: 40 }, (_, index) => `HEPH_TEST_MANY_${index}`);

afterEach(() => {
  delete process.env[NAME];
  for (const name of MANY) delete process.env[name];
});

/** The job leader's environment as the kernel holds it, less the per-job marker. */
function environOf(pid: number): string[] {
  const entries = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').filter(Boolean);
  expect(entries.filter((entry) => entry.startsWith('HEPH_JOB='))).toHaveLength(1);
  return entries.filter((entry) => !entry.startsWith('HEPH_JOB=')).sort();
}

/** Starts a job whose shell waits on its stdin, reads the shell's environment, stops the job. */
async function jobEnvironment(runtime: JobRuntime, env?: NodeJS.ProcessEnv): Promise<string[]> {
  const report = await runtime.background({ command: 'echo ready; read line', stdin: true, ...(env ? { env } : {}) });
  expect(report.state).toBe('running');
  try {
    // "Running" is answered once execve has taken the process over, before the kernel has set up
    // where its environment lies; a line from the shell says it has.
    await waitForOutput(runtime, report.id, 'ready');
    return environOf(report.pid!);
  } finally {
    await runtime.kill(report.id, { signal: 'KILL' });
  }
}

const expected = (env: NodeJS.ProcessEnv) => envEntries(env).sort();

describe.each(modeRows())('the environment a job gets (%s)', (mode, skip) => {
  it.skipIf(skip)('is process.env at the call: a variable set, changed and deleted after the supervisor started', async () => {
    const runtime = await startRuntime(mode, { settleMs: 0 });
    const first = await jobEnvironment(runtime);
    expect(supervisorPid(runtime)).not.toBeNull();
    expect(first).toEqual(expected(process.env));
    // Negative control: the oracle tells a job without the variable from one with it.
    expect(first.some((entry) => entry.startsWith(`${NAME}=`))).toBe(false);

    process.env[NAME] = 'one';
    expect(await jobEnvironment(runtime)).toContain(`${NAME}=one`);
    expect(await jobEnvironment(runtime)).toEqual(expected(process.env));
    process.env[NAME] = 'two';
    // process.env passed as the call's own (as the tools pass it) is the same live object.
    expect(await jobEnvironment(runtime, process.env)).toContain(`${NAME}=two`);
    const changed = await jobEnvironment(runtime);
    expect(changed).toContain(`${NAME}=two`);
    expect(changed).not.toContain(`${NAME}=one`);
    delete process.env[NAME];
    const deleted = await jobEnvironment(runtime);
    expect(deleted.some((entry) => entry.startsWith(`${NAME}=`))).toBe(false);
    expect(deleted).toEqual(expected(process.env));
  });

  it.skipIf(skip)("is a call's own env whole, and the next call without one gets process.env again", async () => {
    const runtime = await startRuntime(mode, { settleMs: 0 });
    process.env[NAME] = 'inherited';
    expect(await jobEnvironment(runtime)).toContain(`${NAME}=inherited`);
    // Leaves out the variable (and HOME), changes PATH, adds one.
    const { [NAME]: _left, HOME: _home, ...rest } = process.env;
    const own = { ...rest, PATH: `/heph-test-bin:${process.env.PATH}`, HEPH_TEST_OWN: 'yes' };
    const got = await jobEnvironment(runtime, own);
    expect(got).toEqual(expected(own));
    expect(got.some((entry) => entry.startsWith(`${NAME}=`) || entry.startsWith('HOME='))).toBe(false);
    // An environment of the call's own with nothing in common with the runtime's.
    expect(await jobEnvironment(runtime, { ONLY: 'this' })).toEqual(['ONLY=this']);
    expect(await jobEnvironment(runtime)).toEqual(expected(process.env));
  });

  it.skipIf(skip)('follows many variables set and deleted at once, and a call with an undefined value', async () => {
    const runtime = await startRuntime(mode, { settleMs: 0 });
    await jobEnvironment(runtime);
    MANY.forEach((name, index) => (process.env[name] = `value ${index} = with = signs`));
    expect(await jobEnvironment(runtime)).toEqual(expected(process.env));
    for (const name of MANY.slice(0, 30)) delete process.env[name];
    expect(await jobEnvironment(runtime)).toEqual(expected(process.env));
    const { HOME: _home, ...rest } = process.env;
    expect(await jobEnvironment(runtime, { ...rest, HOME: undefined })).toEqual(expected(rest));
  });

  it.skipIf(skip)('too large for a frame fails that call only; the next one runs with process.env', async () => {
    const runtime = await startRuntime(mode, { settleMs: 0 });
    await jobEnvironment(runtime);
    // 20 variables of 1 MiB: over the 16 MiB frame limit, and far enough from the base to replace it.
    const huge = Object.fromEntries(Array.from({ length: 20 }, (_, index) => [`HEPH_TEST_HUGE_${index}`, 'x'.repeat(1 << 20)]));
    const failed = await runtime.background({ command: 'true', env: { ...process.env, ...huge } });
    expect(failed.state).toBe('failed');
    expect(failed.reason).toContain('exceeds the limit');
    expect(await jobEnvironment(runtime)).toEqual(expected(process.env));
  });

  it.skipIf(skip)('reaches a new supervisor (one that holds no base yet) whole', async () => {
    const runtime = await startRuntime(mode, { settleMs: 0 });
    process.env[NAME] = 'before';
    expect(await jobEnvironment(runtime)).toContain(`${NAME}=before`);
    const first = supervisorPid(runtime)!;
    killSupervisor(runtime);
    // The runtime notices the death (its channel closes); the next call starts a new supervisor.
    expect(await waitFor(runtime, () => supervisorPid(runtime) !== first, 10_000)).toBe(true);
    process.env[NAME] = 'after';
    const got = await jobEnvironment(runtime);
    expect(supervisorPid(runtime)).not.toBe(first);
    expect(got).toContain(`${NAME}=after`);
    expect(got).toEqual(expected(process.env));
  });
});
