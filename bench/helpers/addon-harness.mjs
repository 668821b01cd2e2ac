/**
 * The floors, measured in a process of their own that uses only the addon: a child subreaper with
 * the addon's reaper thread, like the supervisor but with no protocol, no runtime, no policy.
 * Its own process because the reaper reaps every child, which would steal exit statuses from the
 * child_process and execa alternatives measured in the bench process.
 *
 * Requests are JSON lines on stdin, replies JSON lines on stdout:
 *   {op: 'spawn', cgroup: bool, command, env}  -> {ms}   one native.spawn (mkdir of a cgroup first
 *                                                         when asked); then killed and reaped, untimed
 *   {op: 'kill', counts: [n...], marker, tree, env} -> {ms, processes, survivors}
 *        one tree of n processes per cgroup; timed from the first cgroup.kill to the last process reaped
 * stdin EOF: removes its cgroups and exits.
 */
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { native } from '../../dist/supervisor/native.js';
import { findOwnCgroupDir } from '../../dist/supervisor/platform/cgroup.js';
import { isReaped, snapshot, waitForMarked, waitUntil } from '../lib/procs.mjs';

const SIGKILL = 9;
const reaped = new Map();
const waiters = new Map();
let nextToken = 1;

native.setChildSubreaper();
native.startReaper((child) => {
  if (child.token === 0) return; // an orphan of some tree: the /proc poll sees it go
  const waiter = waiters.get(child.token);
  if (waiter) {
    waiters.delete(child.token);
    waiter(child);
  } else reaped.set(child.token, child);
});

function reapedToken(token) {
  const done = reaped.get(token);
  if (done) {
    reaped.delete(token);
    return Promise.resolve(done);
  }
  return new Promise((resolve) => waiters.set(token, resolve));
}

// Our own cgroup subtree, beside the supervisor's, when a writable cgroup v2 tree exists.
let root = null;
let cgroupReason = null;
const probe = findOwnCgroupDir();
if (probe.ok) {
  try {
    root = path.join(probe.parent, `heph-bench-${process.pid}`);
    native.cgroupCreate(root);
  } catch (error) {
    root = null;
    cgroupReason = `cannot create a cgroup under ${probe.parent}: ${error.message}`;
  }
} else cgroupReason = probe.reason;

let cgroupSeq = 0;
function newCgroup() {
  const dir = path.join(root, `c${cgroupSeq++}`);
  native.cgroupCreate(dir);
  return dir;
}

async function removeCgroup(dir) {
  await waitUntil(() => native.cgroupRemove(dir), `cgroup ${dir} removed`, 5000, 1);
}

function spawnInto(cgroup, command, env) {
  const token = nextToken++;
  const child = native.spawn({
    shell: '/bin/sh',
    command,
    cwd: process.cwd(),
    env,
    cgroup,
    stdin: 'null',
    merge: false,
    token,
    forceFork: false,
  });
  return { ...child, token };
}

function closeAll(child) {
  for (const fd of [child.stdout, child.stderr, child.stdin]) if (fd >= 0) native.closeFd(fd);
}

async function spawnOnce({ cgroup, command, env }) {
  const start = performance.now();
  const dir = cgroup ? newCgroup() : null;
  const child = spawnInto(dir, command, env);
  const ms = performance.now() - start;
  closeAll(child);
  native.pidfdSendSignal(child.pidfd, SIGKILL);
  await reapedToken(child.token);
  native.closeFd(child.pidfd);
  if (dir) await removeCgroup(dir);
  return { ms };
}

async function killTrees({ counts, marker, tree, env }) {
  const dirs = [];
  const leaders = [];
  for (const count of counts) {
    const dir = newCgroup();
    dirs.push(dir);
    const child = spawnInto(dir, `COUNT=${count} exec /bin/sh ${tree}`, [...env, marker]);
    closeAll(child);
    native.closeFd(child.pidfd);
    leaders.push(child);
  }
  const total = counts.reduce((a, b) => a + b, 0);
  const seen = snapshot(await waitForMarked(marker, total));
  const start = performance.now();
  for (const dir of dirs) native.cgroupKill(dir);
  await waitUntil(() => seen.every(isReaped), 'every process of the trees reaped', 20_000, 1);
  const ms = performance.now() - start;
  await Promise.all(leaders.map((leader) => reapedToken(leader.token)));
  for (const dir of dirs) await removeCgroup(dir);
  return { ms, processes: seen.length, survivors: seen.filter((entry) => !isReaped(entry)).length };
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, cleanupAndExit);
const lines = readline.createInterface({ input: process.stdin });
const reply = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
reply({ ready: true, pid: process.pid, cgroupRoot: root, cgroupReason });
for await (const line of lines) {
  const request = JSON.parse(line);
  try {
    if ((request.op === 'kill' || request.cgroup) && !root) reply({ skipped: `no writable cgroup v2 tree: ${cgroupReason}` });
    else if (request.op === 'spawn') reply(await spawnOnce(request));
    else if (request.op === 'kill') reply(await killTrees(request));
    else reply({ error: `unknown op ${request.op}` });
  } catch (error) {
    reply({ error: error.stack ?? String(error) });
  }
}
cleanupAndExit();

/** Kills whatever is left in our cgroups, removes them, exits. */
function cleanupAndExit() {
  if (root) {
    for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const dir = path.join(root, entry.name);
      native.cgroupKill(dir);
      const deadline = Date.now() + 2000;
      while (!native.cgroupRemove(dir) && Date.now() < deadline);
    }
    native.cgroupRemove(root);
  }
  process.exit(0);
}
