#!/usr/bin/env node
/**
 * `node mcp-tap.mjs LOG COMMAND ARGS...`: runs an MCP stdio server (COMMAND ARGS...) between an
 * agent CLI and it, copying both directions byte for byte and appending each line to LOG as
 * `{"dir":"in"|"out","line":...}`, so a test can compare what the server wrote with what the
 * client handed its model. When the client's side of stdin ends (or the tap is killed, which
 * closes the same pipe), the server's stdin ends; the tap exits when the server has.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';

const [log, command, ...args] = process.argv.slice(2);
if (!log || !command) {
  process.stderr.write('usage: node mcp-tap.mjs LOG COMMAND [ARGS...]\n');
  process.exit(2);
}
const fd = fs.openSync(log, 'a');
const server = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });

function tee(dir, from, to) {
  let partial = '';
  from.on('data', (chunk) => {
    to.write(chunk);
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop();
    for (const line of lines) fs.writeSync(fd, `${JSON.stringify({ dir, at: Date.now(), line })}\n`);
  });
}
tee('in', process.stdin, server.stdin);
tee('out', server.stdout, process.stdout);
process.stdin.on('end', () => {
  fs.writeSync(fd, `${JSON.stringify({ dir: 'eof', at: Date.now(), line: '' })}\n`);
  server.stdin.end();
});
server.stdin.on('error', () => {});
process.stdout.on('error', () => {});
// A client's SIGTERM or SIGINT is for the server: pass it on and exit with it.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  process.on(signal, () => {
    fs.writeSync(fd, `${JSON.stringify({ dir: 'signal', at: Date.now(), line: signal })}\n`);
    server.kill(signal);
  });
}
server.on('close', (code, signal) => {
  fs.writeSync(fd, `${JSON.stringify({ dir: 'exit', at: Date.now(), line: `${code} ${signal}` })}\n`);
  fs.closeSync(fd);
  process.exit(code ?? (signal ? 128 + 15 : 1));
});
