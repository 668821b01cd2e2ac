/**
 * The supervisor's end of the channel: the inherited socket on fd 3. Frames in, replies and
 * events out. A malformed frame gets an error reply (or event, when it has no id) and the channel
 * stays up.
 */
import net from 'node:net';
import { encodeFrame, FrameReader } from '../src/protocol/codec.js';
import { ProtocolError, serializeError } from '../src/errors.js';
import type { Request, SupervisorEvent } from '../src/protocol/messages.js';

export const CHANNEL_FD = 3;

export class SupervisorChannel {
  private readonly socket: net.Socket;
  private readonly reader = new FrameReader();

  constructor(onRequest: (request: Request) => Promise<unknown>, onClose: () => void) {
    this.socket = new net.Socket({ fd: CHANNEL_FD, readable: true, writable: true });
    this.socket.on('data', (chunk: Buffer) =>
      this.reader.push(chunk, (frame) => {
        if (!frame.ok) {
          this.send({ event: 'protocol-error', message: frame.message });
          return;
        }
        const request = frame.value as Request;
        if (!isRequest(request)) {
          const id = (frame.value as { id?: unknown } | null)?.id;
          const error = serializeError(new ProtocolError('a request needs a numeric id and a string type'));
          if (typeof id === 'number') this.send({ id, ok: false, error });
          else this.send({ event: 'protocol-error', message: error.message });
          return;
        }
        onRequest(request).then(
          (value) => this.send({ id: request.id, ok: true, value: value ?? null }),
          (error: unknown) => this.send({ id: request.id, ok: false, error: serializeError(error) }),
        );
      }),
    );
    // EOF or a reset: the runtime is gone (or closed us). Either way, the session is over.
    this.socket.on('end', onClose);
    this.socket.on('error', onClose);
    this.socket.on('close', onClose);
  }

  send(message: SupervisorEvent | { id: number; ok: boolean; value?: unknown; error?: unknown }): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    this.socket.write(encodeFrame(message));
  }

  close(): void {
    this.socket.destroy();
  }
}

function isRequest(value: unknown): value is Request {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as { id?: unknown; type?: unknown };
  return typeof record.id === 'number' && Number.isSafeInteger(record.id) && typeof record.type === 'string';
}
