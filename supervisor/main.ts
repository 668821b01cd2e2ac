/**
 * The supervisor process's entry: wiring only. Started by the runtime
 * (src/runtime/supervisor-client.ts) with the channel on fd 3, in its own session. It becomes a
 * child subreaper, owns every job (requests/), and when the runtime goes away (channel EOF, or the
 * pidfd on its parent) it stops every job, reaps everything, removes its cgroups and exits
 * (shutdown.ts).
 */
import { CHANNEL_FD, SupervisorChannel } from './channel.js';
import { PROCESS_TITLE } from './names.js';
import { leaderGone } from './jobs/abandon.js';
import { native } from './native.js';
import { requestHandler } from './requests/index.js';
import { shutdown } from './cleanup/shutdown.js';
import { SupervisorState } from './state.js';
import { warn } from './warn.js';

// First of all: a job runs as our uid, and a dumpable supervisor would let it ptrace us or take
// the lock vault's descriptors (pidfd_getfd) and then crash us (issue 28, item 10).
native.setNotDumpable();
process.title = PROCESS_TITLE;
// Descriptors the runtime's process leaked to us (opened without close-on-exec, which libuv's
// spawn passes on): we must not keep a pipe its host waits on open. Everything Node and libuv open
// is close-on-exec, and 0-2 and the channel are ours, so only those are kept.
native.closeInheritedFds(CHANNEL_FD);

const state = new SupervisorState();
const stop = (): void => void shutdown(state, () => channel.close());

native.setChildSubreaper();
native.startReaper((child) => {
  if (child.token > 0) {
    const job = state.jobs.get(child.token - 1);
    // A leader no job has: its setup failed, and jobs/abandon.ts waits for its end.
    if (job) job.leaderReaped(child.code, child.signal);
    else leaderGone(child.token);
  }
  state.pokeEndedJobs();
});

const channel: SupervisorChannel = new SupervisorChannel(
  requestHandler({ state, send: (event) => channel.send(event), shutdown: stop }),
  stop,
);

// The parent's death: the kernel's parent-death signal, which comes before a dying runtime has
// torn down its memory (the channel's EOF comes only after that, when its files are closed), and
// its pidfd, which also covers a runtime whose channel end leaked into some other process. If the
// parent died before we got here, we were reparented: shut down now.
const expectedParent = Number(process.env.HEPH_JOBS_PARENT_PID);
try {
  const watching = native.watchParent(expectedParent, (error) => {
    // A watch that failed says nothing of the parent: the channel's EOF still tells us it died.
    if (error) warn(`cannot watch the runtime process: ${error.message}`);
    else stop();
  });
  if (!watching) throw new Error('parent already gone');
} catch {
  stop();
}

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
