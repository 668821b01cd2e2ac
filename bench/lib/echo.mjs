/** The far end of a raw status round trip (figures 6 and wait latency): helpers/echo-server.mjs. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { encodeFrame, FrameReader } from '../../dist/src/protocol/codec.js';
import { BENCH_DIR } from './context.mjs';

/** The echo process, spawned as the supervisor is (channel on fd 3, same env switch for msgpackr). */
export class Echo {
  constructor() {
    this.child = spawn(process.execPath, [path.join(BENCH_DIR, 'helpers', 'echo-server.mjs')], {
      stdio: ['ignore', 'ignore', 'inherit', 'pipe'],
      env: { ...process.env, MSGPACKR_NATIVE_ACCELERATION_DISABLED: 'true' },
    });
    this.socket = this.child.stdio[3];
    this.reader = new FrameReader();
    this.waiting = null;
    this.nextId = 1;
    this.socket.on('data', (chunk) => this.reader.push(chunk, (frame) => this.waiting?.(frame.value)));
  }

  request(body) {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.socket.write(encodeFrame({ ...body, id: this.nextId++ }));
    });
  }

  async close() {
    const exited = once(this.child, 'exit');
    this.socket.end();
    await exited;
  }
}
