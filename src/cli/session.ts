/**
 * One session of `heph-jobs`: the runtime every command uses, and its end. However the session
 * ends (quit, Ctrl-D, end of input, the MCP client gone, a key in watch, a signal), it ends once:
 * every job is stopped as by `job_kill`, then the supervisor exits, then the CLI says how many jobs
 * it stopped.
 */
import os from 'node:os';
import type { JobReport } from '../reports/report.js';
import type { JobRuntime } from '../runtime/job-runtime.js';

export interface SessionEnd {
  /** Jobs that were running (or waiting for their locks) when the session ended. */
  stopped: number;
  /** Every job's final report (without output). */
  jobs: JobReport[];
}

/** Jobs a session end stops: those still running or waiting. */
export function activeJobs(runtime: JobRuntime): JobReport[] {
  return runtime.list().filter((job) => job.state === 'running' || job.state === 'waiting');
}

export function stoppedText(count: number): string {
  return `stopped ${count} ${count === 1 ? 'job' : 'jobs'}`;
}

export class Session {
  private ending: Promise<SessionEnd> | null = null;
  private readonly signalHandlers = new Map<NodeJS.Signals, () => void>();

  constructor(readonly runtime: JobRuntime) {}

  get ended(): boolean {
    return this.ending !== null;
  }

  /** Closes the runtime (once; every later call gets the same answer). */
  end(): Promise<SessionEnd> {
    this.ending ??= (async () => {
      const stopped = activeJobs(this.runtime).length;
      await this.runtime.close();
      return { stopped, jobs: this.runtime.list() };
    })();
    return this.ending;
  }

  /**
   * On SIGTERM, SIGHUP (the terminal went away) and SIGINT (when it is a signal, not a key read by
   * the shell), ends the session and calls `exit` with 128 + the signal's number.
   */
  onSignals(exit: (code: number, end: SessionEnd) => void, signals: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT']): void {
    for (const signal of signals) {
      const handler = () => {
        void this.end().then((end) => exit(128 + (os.constants.signals[signal] ?? 0), end));
      };
      this.signalHandlers.set(signal, handler);
      process.on(signal, handler);
    }
  }

  removeSignalHandlers(): void {
    for (const [signal, handler] of this.signalHandlers) process.off(signal, handler);
    this.signalHandlers.clear();
  }
}
