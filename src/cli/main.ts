#!/usr/bin/env node
/**
 * The `heph-jobs` binary: the interactive shell (no subcommand), `watch`, and `mcp`. One runtime
 * per process; every way the process ends goes through `Session.end()`, which stops every job. If
 * the process is killed outright, the supervisor sees its channel close and stops them itself.
 */
import fs from 'node:fs';
import { JobRuntime } from '../runtime/job-runtime.js';
import { createTools } from '../tools/index.js';
import { USAGE, packageVersion, parseCliArgs, type CliOptions } from './args.js';
import { endObject } from './json-output.js';
import { serveMcp } from './mcp.js';
import { waitCapFromEnv } from './mcp-time.js';
import { Session, stoppedText, type SessionEnd } from './session.js';
import { runShell } from './shell.js';
import { paletteFor } from './colour.js';
import { watchFrames } from './watch.js';
import { firstLine, restoreScreen, watchLive } from './watch-live.js';

/** Exit status for a bad command line (as getopt-style tools use). */
const EXIT_USAGE = 2;

/** The session, once there is one: an unexpected error still ends it (and every job) first. */
let current: Session | null = null;

async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseCliArgs(argv);
  if (!parsed.ok) {
    process.stderr.write(`heph-jobs: ${parsed.problem}\n\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  const options = parsed.options;
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const version = packageVersion();
  if (options.version) {
    process.stdout.write(`${version}\n`);
    return 0;
  }
  if (options.cwd !== undefined && !isDirectory(options.cwd)) {
    process.stderr.write(`heph-jobs: --cwd ${options.cwd} is not a directory\n`);
    return EXIT_USAGE;
  }
  // The flag wins over the variable; a bad variable is refused like a bad flag.
  const envCap = options.subcommand === 'mcp' && options.waitCapMs === undefined ? waitCapFromEnv(process.env) : {};
  if ('problem' in envCap) {
    process.stderr.write(`heph-jobs: ${envCap.problem}\n`);
    return EXIT_USAGE;
  }
  const waitCapMs = options.waitCapMs ?? envCap.capMs;

  const runtime = await JobRuntime.start({
    // A person or a model acts seconds after the session opens: the supervisor is ready by then.
    startSupervisor: 'eager',
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.maxJobs === undefined ? {} : { maxJobs: options.maxJobs }),
    ...(options.containment === undefined ? {} : { containment: options.containment }),
  });
  const session = new Session(runtime);
  current = session;
  session.onSignals((code, end) => {
    restoreScreen();
    sayEnd(options, end, true);
    process.exit(code);
  });
  // A reader that went away (`heph-jobs ... | head`): end the session rather than die mid-write.
  process.stdout.on('error', () => {
    void session.end().then(() => process.exit(1));
  });

  switch (options.subcommand) {
    case 'mcp':
      await serveMcp({
        session,
        input: process.stdin,
        output: process.stdout,
        log: (line) => process.stderr.write(`${line}\n`),
        version,
        structured: options.structured,
        ...(waitCapMs === undefined ? {} : { waitCapMs }),
      });
      return 0;
    case 'watch':
      return watch(session, options);
    default:
      return runShell({ session, input: process.stdin, output: process.stdout, errors: process.stderr, json: options.json, yes: options.yes, intervalMs: options.intervalMs, version });
  }
}

/** `heph-jobs watch -- CMD...`: starts each command as a job and watches them; the session ends with the watch. */
async function watch(session: Session, options: CliOptions): Promise<number> {
  const runtime = session.runtime;
  // The commands were typed on the command line: that is the approval.
  const tools = createTools(runtime, { approve: async () => 'once' });
  const notes: string[] = [];
  for (const command of options.commands) {
    const result = await tools.background.call({ command });
    if (result.isError) notes.push(firstLine(result.text));
  }
  const empty = 'no jobs: heph-jobs watch -- CMD... starts commands and watches them (the shell has a watch command for its own jobs)';
  const live = process.stdin.isTTY === true && process.stdout.isTTY === true && !options.json;
  if (live) {
    await watchLive({
      runtime,
      input: process.stdin,
      output: process.stdout,
      intervalMs: options.intervalMs,
      empty,
      notes,
      leave: options.commands.length === 0 ? 'quits' : 'quits: every job is stopped',
      stop: (id) => tools.userKillCall(id),
      palette: paletteFor(process.stdout),
    });
  } else {
    for (const note of notes) process.stderr.write(`${note}\n`);
    // Like `top -b`: a frame per interval until every job has ended (a signal ends it sooner).
    await watchFrames({
      runtime,
      output: process.stdout,
      json: options.json,
      intervalMs: options.intervalMs,
      empty,
      until: () => runtime.list().every((job) => job.state !== 'running' && job.state !== 'waiting'),
    });
  }
  sayEnd(options, await session.end(), false);
  return notes.length > 0 ? 1 : 0;
}

/** The last word of a session that ended outside the shell's own loop (a watch's end, or a signal). */
function sayEnd(options: CliOptions, end: SessionEnd, bySignal: boolean): void {
  if (options.subcommand === 'mcp') {
    // stdout is the protocol's.
    process.stderr.write(`heph-jobs mcp: ended by a signal; ${stoppedText(end.stopped)}\n`);
  } else if (options.json) {
    process.stdout.write(`${JSON.stringify(endObject(end, bySignal))}\n`);
  } else {
    process.stdout.write(`${bySignal ? '\n' : ''}session ended${bySignal ? ' by a signal' : ''}: ${stoppedText(end.stopped)}\n`);
  }
}

function isDirectory(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  async (error: unknown) => {
    process.stderr.write(`heph-jobs: ${error instanceof Error ? error.message : String(error)}\n`);
    await current?.end().catch(() => undefined);
    process.exit(1);
  },
);
