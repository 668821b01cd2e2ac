/**
 * The raw msgpack round trip of figure 6: a process that reads length-prefixed msgpack frames on
 * fd 3 (the same inherited socket and the same pinned codec as the supervisor's channel) and
 * answers each request. `{type: 'set', value}` stores a reply value; any other request gets
 * `{id, ok: true, value}` with the stored value, encoded afresh each time as the supervisor does.
 *
 * The raw floor of the wait figure needs the same hops as a waiting status: a process writes a
 * line (or exits), a reader notices, the reader answers over the socket. So this process can also
 * start a shell whose stdout it reads (`{type: 'watch', command}`, answered once the shell printed
 * its first line) and hold a request until that shell prints a line that matches
 * (`{type: 'wait-line', until}`) or until it has exited with its stdout at EOF
 * (`{type: 'wait-exit'}`, child_process's 'close').
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { encodeFrame, FrameReader } from '../../dist/src/protocol/codec.js';

const socket = new net.Socket({ fd: 3, readable: true, writable: true });
const reader = new FrameReader();
let stored = null;
/** The watched shell: its unfinished last line and what a held request waits for. */
let watched = null;
/** Shells still running: killed when the bench closes the socket (the line shell never ends). */
const children = new Set();

const answer = (id, value) => socket.write(encodeFrame({ id, ok: true, value }));

function watch(id, command) {
  const child = spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  const entry = { child, partial: '', onLine: null, onClose: null };
  watched = entry;
  let started = false;
  child.stdout.setEncoding('latin1');
  child.stdout.on('data', (text) => {
    const lines = (entry.partial + text).split('\n');
    entry.partial = lines.pop();
    if (!started) {
      started = true;
      answer(id, null);
    }
    for (const line of lines) entry.onLine?.(line);
  });
  child.on('close', () => {
    children.delete(child);
    entry.onClose?.();
  });
}

socket.on('data', (chunk) =>
  reader.push(chunk, (frame) => {
    if (!frame.ok) throw new Error(frame.message);
    const request = frame.value;
    if (request.type === 'watch') return watch(request.id, request.command);
    if (request.type === 'wait-line') {
      const pattern = new RegExp(request.until);
      watched.onLine = (line) => {
        if (!pattern.test(line)) return;
        watched.onLine = null;
        answer(request.id, stored);
      };
      return;
    }
    if (request.type === 'wait-exit') {
      watched.onClose = () => answer(request.id, stored);
      return;
    }
    if (request.type === 'set') stored = request.value;
    answer(request.id, request.type === 'set' ? null : stored);
  }),
);
const quit = () => {
  for (const child of children) child.kill('SIGKILL');
  process.exit(0);
};
socket.on('end', quit);
socket.on('error', quit);
