/** The alternative a job is measured against: `sh -c COMMAND` by child_process.spawn, as a host would start it. */
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
