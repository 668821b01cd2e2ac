/**
 * Issue 28, item 5: a supervisor under a low RLIMIT_NOFILE (its runtime started under `prlimit
 * --nofile=64`) bounds every descriptor it keeps by that limit and keeps some free for kills and
 * cleanup: each job it starts answers statuses and its kill, close() leaves no process (kernel
 * truth: a FIFO every job process holds reaches EOF, no process carries the test's marker), and a
 * job it cannot start for want of descriptors is refused with a sentence naming EMFILE.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { EnvMarker, SharedEofOracle, within } from '../helpers/hardening.js';
import { isReaped, see } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES, tempDir } from '../helpers/runtime.js';
import { BOUNDED } from '../helpers/bounded.js';

const LIMIT = 64;
const JOBS = 8;
const MEMBERS = 40;

interface Started {
  supervisorPid: number;
  started: number[];
  refused: string[];
  statuses: { id: number; state?: string; procs?: number | null; ready?: boolean; error?: string }[];
}
interface Ended {
  kills: { id: number; state?: string; cleanedUp?: boolean; error?: string }[];
  closed: string;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** The host under `prlimit --nofile=LIMIT`, its JSON lines one by one, and its stdin to say go on. */
function startHost(mode: string, marker: EnvMarker, fifo: string, env: NodeJS.ProcessEnv = {}) {
  const child: ChildProcess = spawn('prlimit', [`--nofile=${LIMIT}:${LIMIT}`, process.execPath, `${FIXTURES}/low-fd-host.mjs`, mode, String(JOBS), String(MEMBERS), fifo], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: marker.env(env),
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Whatever the test saw, nothing it started stays: the host, then every marked process.
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    marker.killSurvivors();
  });
  const lines = readline.createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async <T>(what: string): Promise<T> => {
    const line = await within(lines.next(), 120_000, what);
    if (line.done) throw new Error(`the host ended before ${what}`);
    return JSON.parse(line.value) as T;
  };
  return { child, exited, next };
}

/** Says go on; the host's kills and close() must have stopped every job and left no marked process. */
async function killsAndCloseLeaveNothing(host: ReturnType<typeof startHost>, first: Started, oracle: SharedEofOracle, marker: EnvMarker): Promise<void> {
  host.child.stdin!.write('go\n');
  const ended = await host.next<Ended>('the kills and close()');
  expect(ended.kills).toEqual(first.started.map((id) => ({ id, state: 'killed', cleanedUp: true })));
  expect(ended.closed).toBe('ok');
  expect(await oracle.finish(20_000)).toBe(true);
  // (The host carries the marker too: it is looked for once the host has exited.)
  await within(host.exited, 20_000, 'the host to exit');
  expect(marker.survivors()).toEqual([]);
}

describe.each(modeRows())(`a supervisor under RLIMIT_NOFILE ${LIMIT} (%s)`, (mode, skip) => {
  it.skipIf(skip)('answers every status and kill of the jobs it starts, and close() leaves nothing', async () => {
    const marker = new EnvMarker();
    const oracle = new SharedEofOracle();
    cleanups.push(() => oracle.dispose());
    const host = startHost(mode, marker, oracle.fifo);
    const first = await host.next<Started>('the statuses');
    const supervisor = see(first.supervisorPid);

    // Some jobs start; every one started answers its statuses with its members counted.
    expect(first.started.length).toBeGreaterThan(0);
    expect(first.statuses.filter((status) => status.error !== undefined)).toEqual([]);
    for (const status of first.statuses) expect(status).toMatchObject({ state: 'running', procs: MEMBERS + 1, ready: true });
    // Those refused say it is the descriptor limit (EMFILE), never a cut message.
    for (const refusal of first.refused) {
      expect(refusal).toMatch(/EMFILE/);
      expect(refusal).not.toMatch(/MSG_CTRUNC|Message too long/);
      // A limit of the machine, not the command's fault (issue 28, item 11).
      expect(refusal).toMatch(/This is a limit of the machine \(EMFILE: /);
      expect(refusal).not.toMatch(/Fix the command/);
    }
    // Negative control: while the jobs run, the oracles see them.
    expect(await oracle.finish(300)).toBe(false);
    expect(marker.survivors().length).toBeGreaterThanOrEqual(first.started.length * (MEMBERS + 1) + 1);

    await killsAndCloseLeaveNothing(host, first, oracle, marker);
    expect(isReaped(supervisor)).toBe(true);
    console.log(`[${mode}] under RLIMIT_NOFILE ${LIMIT}: ${first.started.length} of ${JOBS} jobs of ${MEMBERS + 1} processes started, ${first.refused.length} refused`);
  }, 180_000);

  it.skipIf(skip)('refuses a job whose lock descriptors do not fit with EMFILE, not a cut message', async () => {
    const marker = new EnvMarker();
    const oracle = new SharedEofOracle();
    cleanups.push(() => oracle.dispose());
    const dir = tempDir();
    const host = startHost(mode, marker, oracle.fifo, { HEPH_TEST_LOCKS: `path:${dir}/lock-` });
    const first = await host.next<Started>('the statuses');
    expect(first.started.length).toBeGreaterThan(0);
    expect(first.refused.length).toBeGreaterThan(0);
    for (const refusal of first.refused) {
      expect(refusal).toMatch(/EMFILE/);
      expect(refusal).not.toMatch(/MSG_CTRUNC|Message too long/);
      // A limit of the machine, not the command's fault (issue 28, item 11).
      expect(refusal).toMatch(/This is a limit of the machine \(EMFILE: /);
      expect(refusal).not.toMatch(/Fix the command/);
    }
    expect(first.statuses.filter((status) => status.error !== undefined)).toEqual([]);
    expect(await oracle.finish(300)).toBe(false);
    await killsAndCloseLeaveNothing(host, first, oracle, marker);
  }, 180_000);
});

describe('descriptors passed when none are free', () => {
  it('a message cut for want of free descriptors is EMFILE, not a message too long', () => {
    const out = execFileSync('prlimit', [`--nofile=${LIMIT}:${LIMIT}`, process.execPath, `${FIXTURES}/cut-fds.mjs`], { ...BOUNDED, encoding: 'utf8' });
    const error = JSON.parse(out) as { code: string; message: string };
    expect(error.code).toBe('EMFILE');
    expect(error.message).not.toMatch(/Message too long/);
  });
});
