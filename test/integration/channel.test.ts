/**
 * The channel as the supervisor sees it: a supervisor started by hand on a socket we control, fed
 * malformed and oversized frames; each gets an error and the channel stays up.
 */
import { describe, expect, it } from 'vitest';
import { encodeFrame } from '../../src/protocol/codec.js';
import { startBareSupervisor } from '../helpers/hardening.js';

describe('the channel', () => {
  it('answers malformed, oversized and unknown frames with errors and stays up', async () => {
    const { socket, next, exited } = startBareSupervisor();
    try {
      socket.write(encodeFrame({ id: 1, type: 'ping' }));
      expect(await next()).toMatchObject({ id: 1, ok: true });

      const header = Buffer.alloc(4);
      header.writeUInt32BE(3);
      socket.write(Buffer.concat([header, Buffer.from([0xc1, 0xc1, 0xc1])]));
      expect(await next()).toMatchObject({ event: 'protocol-error', message: expect.stringContaining('does not decode') });

      const huge = Buffer.alloc(4);
      huge.writeUInt32BE(64 * 1024 * 1024);
      socket.write(Buffer.concat([huge, Buffer.alloc(1024 * 1024)]));
      expect(await next()).toMatchObject({ event: 'protocol-error', message: expect.stringContaining('exceeds the limit') });
      // The rest of the oversized frame is skipped as it arrives.
      for (let sent = 1024 * 1024; sent < 64 * 1024 * 1024; sent += 1024 * 1024) socket.write(Buffer.alloc(1024 * 1024));

      socket.write(encodeFrame({ id: 2, type: 'no-such-request' }));
      expect(await next()).toMatchObject({ id: 2, ok: false, error: { code: 'ERR_PROTOCOL' } });
      socket.write(encodeFrame({ type: 'ping' }));
      expect(await next()).toMatchObject({ event: 'protocol-error', message: expect.stringContaining('numeric id') });
      socket.write(encodeFrame({ id: 3, type: 'spawn', params: { job: 0 } }));
      expect(await next()).toMatchObject({ id: 3, ok: false, error: { message: expect.stringContaining('hello must come first') } });

      socket.write(encodeFrame({ id: 4, type: 'ping' }));
      expect(await next()).toMatchObject({ id: 4, ok: true });
    } finally {
      socket.end();
      await exited;
    }
  });

  it('exits when the runtime end of the channel closes', async () => {
    const { child, socket, exited } = startBareSupervisor();
    socket.destroy();
    await exited;
    expect(child.exitCode).toBe(0);
  });
});
