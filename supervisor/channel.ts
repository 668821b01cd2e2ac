/**
 * The supervisor's end of the channel: the inherited socket on fd 3. Frames in, replies and
 * events out. A malformed frame gets an error reply (or event, when it has no id) and the channel
 * stays up; so does a one-way request that is refused (an event names it). So does a reply that
 * cannot be encoded (larger than a frame, whatever the request asked for): the request gets an
 * error reply instead, and the supervisor lives on.
 */
import net from 'node:net';
import { encodeFrame, FrameReader } from '../src/protocol/codec.js';
import { ProtocolError, serializeError } from '../src/protocol/errors.js';
import { isEnvelope, isOneWayEnvelope, isRequestType, type Reply, type Request, type RequestFields, type SupervisorEvent } from '../src/protocol/messages.js';

export const CHANNEL_FD = 3;

export class SupervisorChannel {
  private readonly socket: net.Socket;
  private readonly reader = new FrameReader();
  /** Frames written in this turn go out in one writev when it ends (see send). */
  private corked = false;

  constructor(onRequest: (request: RequestFields) => Promise<unknown>, onClose: () => void) {
    this.socket = new net.Socket({ fd: CHANNEL_FD, readable: true, writable: true });
    this.socket.on('data', (chunk: Buffer) =>
      this.reader.push(chunk, (frame) => {
        if (!frame.ok) {
          this.send({ event: 'protocol-error', message: frame.message });
          return;
        }
        const envelope = frame.value;
        if (isOneWayEnvelope(envelope)) {
          // Served as any request; no reply, but a refusal is told, naming the request.
          const request = envelope as RequestFields;
          onRequest(request).catch((error: unknown) =>
            this.send({ event: 'protocol-error', message: `one-way request ${request.type}: ${serializeError(error).message}` }),
          );
          return;
        }
        if (!isEnvelope(envelope)) {
          const id = (frame.value as { id?: unknown } | null)?.id;
          const error = serializeError(new ProtocolError('a request needs a numeric id and a string type'));
          if (typeof id === 'number') this.send({ id, ok: false, error });
          else this.send({ event: 'protocol-error', message: error.message });
          return;
        }
        if (!isRequestType(envelope.type)) {
          const error = new ProtocolError(`unknown request type ${JSON.stringify(envelope.type)}`);
          this.send({ id: envelope.id, ok: false, error: serializeError(error) });
          return;
        }
        const request = envelope as Request;
        onRequest(request).then(
          (value) => this.reply(request, { id: request.id, ok: true, value: value ?? null }),
          (error: unknown) => this.reply(request, { id: request.id, ok: false, error: serializeError(error) }),
        );
      }),
    );
    // EOF or a reset: the runtime is gone (or closed us). Either way, the session is over.
    this.socket.on('end', onClose);
    this.socket.on('error', onClose);
    this.socket.on('close', onClose);
  }

  send(message: SupervisorEvent | Reply): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    const frame = this.frameOf(message);
    // The replies and events of one turn (a reaper batch ends many jobs at once) leave in one
    // system call and wake the runtime once. The flush runs as soon as this turn's code and
    // promise reactions are done, so a lone reply is not held back. It is a tick queued from a
    // microtask: Node runs the whole microtask queue before such a tick, so a reply still on its
    // way through promise reactions leaves with the events before it (a job's end wakes its
    // waiting status in the same turn as its `exited` and `cleaned-up` events; a plain nextTick
    // ran before those reactions and sent the answer in a second write, a second wake-up of the
    // runtime).
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      queueMicrotask(() => process.nextTick(() => this.flush()));
    }
    this.socket.write(frame);
  }

  private flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.socket.uncork();
  }

  /** Sends a request's reply; one that cannot be encoded becomes an error reply naming why. */
  private reply(request: Request, reply: Reply): void {
    try {
      this.send(reply);
    } catch (error) {
      const failure = new ProtocolError(`the reply to ${request.type} could not be sent: ${(error as Error).message}; ask for less`);
      this.send({ id: request.id, ok: false, error: serializeError(failure) });
    }
  }

  /** An event that cannot be encoded (no request to answer) is reported as a protocol error. */
  private frameOf(message: SupervisorEvent | Reply): Buffer {
    if ('id' in message) return encodeFrame(message);
    try {
      return encodeFrame(message);
    } catch (error) {
      return encodeFrame({ event: 'protocol-error', message: `an event could not be sent: ${(error as Error).message}` });
    }
  }

  close(): void {
    // What this turn sent goes out before the socket closes, as it did when each write was immediate.
    this.flush();
    this.socket.destroy();
  }
}
