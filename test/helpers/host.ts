/** Runtimes hosted in a child process of the test, as a host embeds one, for crashes of both together. */
import type { ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import { isReaped, waitUntil, type SeenProcess } from './kernel.js';

/** The first line the host prints (what it started), or a rejection naming `what` if it exits first. */
export function firstLine(host: ChildProcess, what: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: host.stdout! }).once('line', resolve);
    host.once('exit', (code) => reject(new Error(`${what} exited early with ${code}`)));
  });
}

/** Kills the host and its supervisor together, both frozen first so neither sees the other die. */
export async function killTogether(host: ChildProcess, supervisor: SeenProcess): Promise<void> {
  const hostGone = new Promise((resolve) => host.once('exit', resolve));
  process.kill(host.pid!, 'SIGSTOP');
  process.kill(supervisor.pid, 'SIGSTOP');
  process.kill(supervisor.pid, 'SIGKILL');
  host.kill('SIGKILL');
  await hostGone;
  await waitUntil(() => isReaped(supervisor), 'the killed supervisor reaped');
}
