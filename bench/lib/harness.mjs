/** Client of helpers/addon-harness.mjs: one request at a time, JSON lines both ways. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const HELPER = path.join(path.dirname(fileURLToPath(import.meta.url)), '../helpers/addon-harness.mjs');

export class AddonHarness {
  static async start() {
    const child = spawn(process.execPath, [HELPER], { stdio: ['pipe', 'pipe', 'inherit'] });
    const harness = new AddonHarness(child);
    harness.hello = await harness.next();
    return harness;
  }

  constructor(child) {
    this.child = child;
    this.lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }

  async next() {
    const { value, done } = await this.lines.next();
    if (done) throw new Error('the addon harness exited');
    return JSON.parse(value);
  }

  /** True when the harness has a cgroup subtree to make trees in. */
  get cgroup() {
    return this.hello.cgroupRoot !== null;
  }

  async request(body) {
    this.child.stdin.write(`${JSON.stringify(body)}\n`);
    const answer = await this.next();
    if (answer.error) throw new Error(`addon harness: ${answer.error}`);
    return answer;
  }

  async close() {
    if (this.child.exitCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.stdin.end();
    await exited;
  }
}

/** `KEY=value` entries of an environment, as the addon takes them. */
export function envEntries(env) {
  return Object.entries(env)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${value}`);
}
