/**
 * Call to running, both ways: `sh -c COMMAND` by child_process.spawn, as a host would start it,
 * and runtime.background (settle window off), each sample's job killed, untimed, before the next.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { now } from './stats.mjs';

/** Milliseconds from the call to the child's 'spawn' event; the child is then killed and waited for, untimed. */
export async function childRunningMs(command) {
  const start = now();
  const child = spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
  const closed = once(child, 'close');
  await once(child, 'spawn');
  const ms = now() - start;
  child.kill('SIGKILL');
  await closed;
  return ms;
}

/** `sh -c true` to its 'close' (exit and stdio closed). */
export async function childTrue() {
  const child = spawn('/bin/sh', ['-c', 'true'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`sh -c true exited ${code}`);
}

/** Milliseconds of `runtime.background({ command })` to its answer; `notRunning` hears a job that did not run. */
export async function backgroundRunningMs(runtime, command, notRunning) {
  const start = now();
  const report = await runtime.background({ command });
  const ms = now() - start;
  if (report.state !== 'running') notRunning();
  await runtime.kill(report.id, { signal: 'KILL' });
  return ms;
}
