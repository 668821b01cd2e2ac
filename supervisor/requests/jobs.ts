/** Requests about jobs: environment (the base spawns refer to), spawn, kill, read (with its optional wait), write, facts, forget. */
import { InvalidInputError } from '../../src/protocol/errors.js';
import { SupervisedJob } from '../jobs/job.js';
import type { Handlers, RequestContext } from './context.js';
import { endEvents } from './end-events.js';
import { compilePattern, waitOnOutput } from './read-wait.js';
import { NotifyWatches } from '../jobs/notify-watch.js';
import { filterOutput } from '../output/filter.js';

export function jobHandlers(context: RequestContext): Handlers<'environment' | 'spawn' | 'kill' | 'read' | 'write' | 'facts' | 'notify' | 'forget'> {
  const { state } = context;
  const ends = endEvents((event) => context.send(event));
  const watches = new NotifyWatches((event) => context.send(event));
  return {
    environment: ({ version, entries }) => {
      state.environment.set(version, entries);
      return null;
    },
    spawn: async ({ params }) => {
      const { strategy, config } = state.started();
      const env = state.environment.of(params);
      const hooks = {
        onExited: (exited: SupervisedJob) => ends.exited(exited.id, exited.exit!),
        onDone: (finished: SupervisedJob) => ends.cleanedUp(finished.id, finished.limitFacts, finished.lineCount),
      };
      try {
        const job = await SupervisedJob.start(params, env, strategy, config, hooks, (started) => state.jobs.set(started.id, started));
        // From the first line on; a job that already ended still has its output to scan.
        for (const watch of params.notify ?? []) watches.add(job, { ...watch, from: -1 }, true);
        return job.reply;
      } catch (error) {
        state.pokeEndedJobs();
        throw error;
      }
    },
    kill: async ({ params }) => {
      const { read } = params;
      const job = state.job(params.job);
      await job.kill(params);
      // The facts once, after the kill: with the stats when the answer is a report's.
      return read ? { facts: job.facts(true), output: job.read({ tail: read.tail, maxBytes: read.maxBytes }) } : { facts: job.facts() };
    },
    read: async ({ params }) => {
      const { job: id, wait, filter, ...options } = params;
      const job = state.job(id);
      // A bad filter is refused before any wait.
      const pattern = filter ? compilePattern(filter, 'filter') : null;
      const waited = wait ? await waitOnOutput(job, wait, state.started().config.drainMs) : undefined;
      const output = pattern ? await filterOutput(() => job.ring.source(), pattern, options) : job.read(options);
      return { output, facts: job.facts(true), ...(waited ? { waited } : {}) };
    },
    write: async ({ job: id, data, close }) => {
      const job = state.job(id);
      const { input, closed } = await job.write(data, close);
      return { facts: job.facts(), input, closed };
    },
    facts: ({ job }) => state.job(job).facts(),
    notify: ({ job, watch }) => {
      watches.add(state.job(job), watch);
      return null;
    },
    forget: ({ job: id }) => {
      const job = state.job(id);
      if (!job.cleanedUp) throw new InvalidInputError(`job ${id} is still running; only finished jobs can be forgotten`);
      state.jobs.delete(id);
      return null;
    },
  };
}
