/**
 * A runtime in a process of its own, to be SIGKILLed (figure 5). Starts one job per count given
 * on the command line, each a tree of that many processes, prints one JSON line
 * {supervisorPid, jobs: [{id, pid}]} and idles until killed. The marker is in its environment
 * and so in every job's.
 * usage: node crash-host.mjs TREE COUNT...
 */
import { JobRuntime } from '../../dist/src/index.js';
import { supervisorPid } from '../../dist/src/testing.js';

const [tree, ...counts] = process.argv.slice(2);
const runtime = await JobRuntime.start({ settleMs: 0 });
const jobs = [];
for (const count of counts) {
  const report = await runtime.background({ command: `COUNT=${count} exec /bin/sh ${tree}` });
  jobs.push({ id: report.id, pid: report.pid, state: report.state });
}
process.stdout.write(`${JSON.stringify({ supervisorPid: supervisorPid(runtime), jobs })}\n`);
setInterval(() => {}, 1 << 30);
