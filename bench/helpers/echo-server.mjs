/**
 * The raw msgpack round trip of figure 6: a process that reads length-prefixed msgpack frames on
 * fd 3 (the same inherited socket and the same pinned codec as the supervisor's channel) and
 * answers each request. `{type: 'set', value}` stores a reply value; any other request gets
 * `{id, ok: true, value}` with the stored value, encoded afresh each time as the supervisor does.
 */
import net from 'node:net';
import { encodeFrame, FrameReader } from '../../dist/src/protocol/codec.js';

const socket = new net.Socket({ fd: 3, readable: true, writable: true });
const reader = new FrameReader();
let stored = null;
socket.on('data', (chunk) =>
  reader.push(chunk, (frame) => {
    if (!frame.ok) throw new Error(frame.message);
    const request = frame.value;
    if (request.type === 'set') stored = request.value;
    socket.write(encodeFrame({ id: request.id, ok: true, value: request.type === 'set' ? null : stored }));
  }),
);
socket.on('end', () => process.exit(0));
socket.on('error', () => process.exit(0));
