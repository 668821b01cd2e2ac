/**
 * supervisor/warn.ts: a warning reaches the supervisor's stderr as one line, and a stderr whose
 * reader is gone (the runtime died: EPIPE) costs the warning, not the process. Each case runs
 * in a fresh Node with the built module.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BOUNDED } from '../helpers/bounded.js';

const BUILT = pathToFileURL(path.resolve(import.meta.dirname, '../../dist/supervisor/warn.js')).href;
const { NODE_OPTIONS: _flags, ...env } = process.env;

describe('supervisor warnings', () => {
  it('writes one prefixed line to fd 2, and makes no process.stderr stream', () => {
    const code = `const { warn } = await import(${JSON.stringify(BUILT)}); warn('the vault is full');
console.log(JSON.stringify(process.moduleLoadList.includes('NativeModule net')));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { ...BOUNDED, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('heph-jobs supervisor: the vault is full\n');
    // A pipe's process.stderr is a net.Socket: the oracle that no stream was made.
    expect(run.stdout.trim()).toBe('false');
  });

  it('a stderr pipe with no reader (EPIPE) loses the warning and the process goes on', async () => {
    const code = `const { warn } = await import(${JSON.stringify(BUILT)});
process.stdin.once('data', () => { warn('nobody reads this'); process.stdout.write('alive\\n'); process.exit(0); });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.destroy(); // the reader goes away
    child.stdin.end('go\n');
    const [status] = await once(child, 'exit');
    expect(status).toBe(0);
    expect(out).toBe('alive\n');
  });

  it('the control: a plain write(2) to that pipe does fail with EPIPE', async () => {
    const code = `const fs = await import('node:fs');
process.stdin.once('data', () => { try { fs.writeSync(2, 'x\\n'); process.stdout.write('wrote\\n'); } catch (error) { process.stdout.write(error.code + '\\n'); } process.exit(0); });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.destroy();
    child.stdin.end('go\n');
    await once(child, 'exit');
    expect(out).toBe('EPIPE\n');
  });
});
