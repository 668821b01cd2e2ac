/**
 * The `heph-jobs` shell: a person uses the tools the way a model does. Each line is one command;
 * the answer is the tool's report text (or, with `--json`, one JSON object per line carrying the
 * report the text was made from). Level-2 commands ask on the terminal; "always" remembers the
 * exact action for the session. The session ends with `quit`, Ctrl-D or the end of the input, and
 * ending it stops every job.
 *
 * On a terminal: readline's line editing, history kept between sessions (history.ts), tab
 * completion of commands, job numbers and flags; questions take one key (y, n, a); Ctrl-C clears
 * the line, or stops the wait of a command that waits (the job keeps running, or its place in the
 * queue for its locks). From a pipe or a file (`heph-jobs < script.txt`): the lines run in order with
 * no prompt; nobody can be asked there, so level-2 commands are refused unless `--yes`.
 *
 * Reports are written in the shell's dialect (answer-text.ts): their hints name the shell's
 * commands (`status 0`, `kill 0`), not the model's tool calls.
 */
import readline from 'node:readline';
import type { ApprovalAnswer, ApprovalRequest, ToolResult } from '../tools/index.js';
import { createTools } from '../tools/index.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { answerText } from './answer-text.js';
import { paletteFor } from './colour.js';
import { BUILTINS, commandTable } from './command-table.js';
import { complete } from './completion.js';
import { helpText } from './help.js';
import { HISTORY_SIZE, historyFile, loadHistory, saveHistory } from './history.js';
import { answerObject, endObject, errorObject, helpObject, waitingObject } from './json-output.js';
import { waitingNowText, type JobReport } from '../reports/report.js';
import { Notices, noticeText } from '../tools/index.js';
import { askKey } from './keys.js';
import { parseLogsArgs, runLogs } from './logs.js';
import { parseToolInput } from './parse-input.js';
import { closest } from './suggest.js';
import { splitCommand } from './tokenize.js';
import { stoppedText, type Session } from './session.js';
import { watchFrames } from './watch.js';
import { watchLive } from './watch-live.js';
import { toolPortOf } from '../runtime/tool-port.js';

export interface ShellOptions {
  session: Session;
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
  errors: NodeJS.WriteStream;
  /** One JSON object per line instead of text. */
  json: boolean;
  /** Approve every level-2 command without asking. */
  yes: boolean;
  /** Milliseconds between frames of `watch`. */
  intervalMs: number;
  version: string;
  /** The history file (on a terminal). Default: historyFile() from the environment. */
  historyFile?: string;
}

export const PROMPT = 'heph-jobs> ';

/** Said when a level-2 command comes from a script (no terminal to ask on) without --yes. */
export const NOBODY_TO_ASK = 'stdin is not a terminal, so there is nobody to ask; run heph-jobs --yes to approve every action of a script';

const APPROVAL_KEYS = { y: 'once', n: 'deny', a: 'always' } as const;
const APPROVAL_HELP = 'Press y (yes, this once), n (no) or a (always: this exact action, for the rest of the session).';

export async function runShell(options: ShellOptions): Promise<number> {
  const { session, input, output, errors, json } = options;
  const runtime: JobRuntime = session.runtime;
  const interactive = input.isTTY === true;
  // Prompts and questions go where a person sees them, even if the reports are piped elsewhere.
  const promptOutput = output.isTTY ? output : errors;

  let rl: readline.Interface;
  let closed = false;
  let busy = false;
  let question: AbortController | null = null;
  let onClose: (() => void) | null = null;
  let usageErrors = 0;
  /** The commands under way: Ctrl-C stops their waiting. */
  const underWay = new Set<AbortController>();

  const write = (text: string) => {
    // An answer that arrives while the prompt is shown (a command run at once, see below) goes
    // above it: the prompt line is cleared first and redrawn after.
    if (interactive && !busy && output === promptOutput && output.isTTY) {
      readline.clearLine(output, 0);
      readline.cursorTo(output, 0);
    }
    output.write(`${text}\n`);
  };
  const emit = (value: Record<string, unknown>) => write(JSON.stringify(value));

  async function approve(request: ApprovalRequest): Promise<ApprovalAnswer> {
    if (options.yes) return 'once';
    if (!interactive) throw new Error(NOBODY_TO_ASK);
    const query = `Allow ${request.pattern}? [y]es / [n]o / [a]lways: `;
    if (rl.terminal) {
      // One key, no Enter; Ctrl-C or Ctrl-D answers no. The key never reaches the line editor,
      // so it is not typed into the next command, nor kept in the history.
      if (closed) return 'deny';
      return (await askKey({ input, output: promptOutput, question: query, answers: APPROVAL_KEYS, help: APPROVAL_HELP })) ?? 'deny';
    }
    for (;;) {
      const answer = await ask(query);
      if (answer === null) return 'deny';
      const word = answer.trim().toLowerCase();
      if (word === 'y' || word === 'yes') return 'once';
      if (word === 'a' || word === 'always') return 'always';
      if (word === 'n' || word === 'no') return 'deny';
      promptOutput.write('Answer y (yes, this once), n (no) or a (always: this exact action, for the rest of the session).\n');
    }
  }

  /** A line typed (where keys cannot be read one at a time), or null for Ctrl-C / Ctrl-D. It stays out of the history. */
  function ask(query: string): Promise<string | null> {
    if (closed) return Promise.resolve(null);
    const controller = new AbortController();
    question = controller;
    return new Promise<string | null>((resolve) => {
      const finish = (answer: string | null) => {
        question = null;
        onClose = null;
        resolve(answer);
      };
      // Ctrl-D leaves the cursor after the question (Ctrl-C's cancel moves to a new line itself).
      onClose = () => {
        promptOutput.write('\n');
        finish(null);
      };
      controller.signal.addEventListener('abort', () => finish(null), { once: true });
      rl.question(query, { signal: controller.signal }, (answer) => {
        const history = (rl as unknown as { history?: string[] }).history;
        if (history && history[0] === answer) history.shift();
        finish(answer);
      });
    });
  }

  // The shell tells the person of ended jobs itself, in its own words (see answer).
  const tools = createTools(runtime, { approve, notices: false });
  const heard = new Notices(toolPortOf(runtime));
  const table = commandTable(tools.all);

  function jobIds(): number[] {
    return runtime.list().map((job) => job.id);
  }

  const terminal = interactive && promptOutput.isTTY === true;
  const history = terminal ? openHistory(options.historyFile ?? historyFile(), promptOutput) : null;
  rl = readline.createInterface({
    input,
    ...(interactive ? { output: promptOutput } : {}),
    terminal,
    history: history?.lines ?? [],
    historySize: HISTORY_SIZE,
    removeHistoryDuplicates: true,
    prompt: PROMPT,
    ...(interactive ? { completer: (line: string) => complete(line, table, jobIds()) } : {}),
  });
  // Readline adds only the lines typed at its prompt (one-key answers never reach it).
  if (history) rl.on('history', (lines: string[]) => history.save(lines));

  /** Lines received and not yet started, each with whether a Ctrl-C came after it (see SIGINT). */
  const queue: { line: string; interrupted: boolean }[] = [];
  let wake: (() => void) | null = null;
  const notify = () => {
    const resume = wake;
    wake = null;
    resume?.();
  };

  rl.on('line', (line) => {
    // The user's cancellation and reads do not wait behind a busy command (e.g. one waiting for a lock).
    if ((busy || queue.length > 0) && interactive && runsAtOnce(line)) {
      void execute(line)
        .catch((error: unknown) => usageError(line, `heph-jobs: ${(error as Error).message}`))
        .then(() => {
          if (!busy && !closed) rl.prompt(true);
        });
      return;
    }
    queue.push({ line, interrupted: false });
    notify();
  });
  rl.on('close', () => {
    closed = true;
    onClose?.();
    notify();
  });
  rl.on('SIGINT', () => {
    // Ctrl-C: a question is answered "no"; a command under way stops waiting (what it waited for
    // goes on: the job runs, or keeps its place); otherwise the line is cleared, as in bash.
    if (question) {
      question.abort();
      return;
    }
    const empty = rl.line.length === 0;
    const stopping = underWay.size > 0 || queue.length > 0;
    // (Readline's clearLine drops what was typed and ends the line.)
    if (stopping) promptOutput.write('^C');
    (rl as unknown as { clearLine(): void }).clearLine();
    if (stopping) {
      for (const command of underWay) command.abort();
      // A line received before the Ctrl-C but not started yet (Enter and Ctrl-C read together)
      // is under way as far as the person can tell: it starts with its waiting already stopped.
      for (const entry of queue) entry.interrupted = true;
      return;
    }
    if (busy) return;
    if (empty) promptOutput.write('(To end the session and every job, press Ctrl-D or type quit.)\n');
    rl.prompt();
  });

  // A notify watch's match is told as it comes while the prompt waits (bash's `set -b`, which bash
  // calls notify): the person asked to be woken. During a command it comes with that answer.
  const atPrompt = () => terminal && !json && !busy && queue.length === 0 && !closed;
  const stopTelling = runtime.onJobEvent((event) => {
    if (event.type === 'notified' && atPrompt()) void tellAtPrompt();
  });
  async function tellAtPrompt(): Promise<void> {
    const notices = await heard.take();
    if (notices.length === 0) return;
    write(notices.map((notice) => noticeText(notice, 'shell')).join('\n'));
    if (atPrompt()) rl.prompt(true);
  }

  function runsAtOnce(line: string): boolean {
    const { word } = splitCommand(line);
    if (word === '/job-kill') return true;
    const tool = table.get(word);
    return tool !== undefined && tool.level === 0;
  }

  function usageError(line: string, problem: string): void {
    usageErrors++;
    if (json) emit(errorObject(line, problem));
    else errors.write(`${problem}\n`);
  }

  function unknownCommand(line: string, word: string): void {
    const known = [...table.keys(), ...BUILTINS];
    const guess = closest(word, known);
    const hint = guess === null ? `the commands are ${known.join(', ')} (help explains them)` : `did you mean ${guess}? (help lists the commands)`;
    usageError(line, `unknown command ${JSON.stringify(word)}; ${hint}`);
  }

  async function watch(): Promise<void> {
    const empty = 'no jobs yet: background CMD starts one';
    if (interactive && input.isTTY && output.isTTY && !json) {
      await watchLive({
        runtime,
        input,
        output,
        intervalMs: options.intervalMs,
        empty,
        leave: 'returns to the shell',
        stop: (id) => tools.userKillCall(id),
        palette: paletteFor(output),
      });
    } else {
      await watchFrames({ runtime, output, json, intervalMs: options.intervalMs, empty, until: () => true });
    }
  }

  /** Runs one line; Ctrl-C stops its waiting meanwhile. Answers 'quit' when the line ends the session. */
  async function execute(line: string, interrupted = false): Promise<'quit' | undefined> {
    const command = new AbortController();
    if (interrupted) command.abort();
    underWay.add(command);
    try {
      return await run(line, command.signal);
    } finally {
      underWay.delete(command);
    }
  }

  async function run(line: string, signal: AbortSignal): Promise<'quit' | undefined> {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return undefined;
    const { word, rest } = splitCommand(trimmed);
    if (word === 'quit' || word === 'exit') return 'quit';
    if (word === 'help' || word === '?') {
      const text = helpText(rest.trim(), table);
      if (text === null) {
        const guess = closest(rest.trim(), [...table.keys(), ...BUILTINS]);
        usageError(line, `help: there is no command ${JSON.stringify(rest.trim())}; ${guess === null ? 'help lists them' : `did you mean ${guess}?`}`);
      }
      else if (json) emit(helpObject(text));
      else write(text);
      return undefined;
    }
    if (word === 'watch') {
      if (rest.trim() !== '') usageError(line, 'watch takes no arguments; usage: watch');
      else await watch();
      return undefined;
    }
    if (word === 'logs') {
      await logs(line, rest, signal);
      return undefined;
    }
    if (word === '/job-kill') {
      const id = rest.trim();
      await answer(word, '/job-kill', { id }, await tools.userKillCall(id));
      return undefined;
    }
    const tool = table.get(word);
    if (!tool) {
      unknownCommand(line, word);
      return undefined;
    }
    const parsed = parseToolInput(tool, rest, word);
    if (!parsed.ok) {
      usageError(line, parsed.problem);
      return undefined;
    }
    await answer(word, tool.name, parsed.input, await tool.call(parsed.input, { signal, onWaiting }));
    return undefined;
  }

  async function logs(line: string, rest: string, signal: AbortSignal): Promise<void> {
    const parsed = parseLogsArgs(rest);
    if (!parsed.ok) return usageError(line, parsed.problem);
    try {
      await runLogs({ runtime, id: parsed.id, follow: parsed.follow, input, output, errors, signal, ...(json ? { emit } : {}) });
    } catch (error) {
      usageError(line, `logs: ${(error as Error).message}`);
    }
  }

  /** A background waits for its locks: the person sees it (what for, held by whom) and what Ctrl-C does. */
  function onWaiting(job: JobReport): void {
    if (json) emit(waitingObject(job));
    else write(waitingNowText(job));
  }

  /**
   * Writes the answer, then a line per job that ended (or started after waiting for its locks)
   * since the person last saw it, in the shell's words (`status 2 reads them`), as bash says
   * `Done` before its next prompt.
   */
  async function answer(word: string, tool: string, input: unknown, result: ToolResult): Promise<void> {
    heard.observe(result);
    const notices = await heard.take();
    const told = notices.length === 0 ? result : { ...result, notices };
    const text = [answerText(result), ...notices.map((notice) => noticeText(notice, 'shell'))].join('\n');
    if (json) emit(answerObject(word, tool, input, told, text));
    else write(text);
  }

  // --- the loop ---------------------------------------------------------------------------------

  if (interactive) {
    promptOutput.write(
      `heph-jobs ${options.version}: background jobs that end with this session (at most ${toolPortOf(runtime).settings.maxJobs} at once, in ${toolPortOf(runtime).settings.cwd}).\n` +
        'help lists the commands; quit or Ctrl-D ends the session and every job.\n',
    );
    rl.prompt();
  }
  let quit = false;
  for (;;) {
    while (queue.length === 0 && !closed) await new Promise<void>((resolve) => (wake = resolve));
    const next = queue.shift();
    if (next === undefined) break;
    const { line } = next;
    busy = true;
    try {
      quit = (await execute(line, next.interrupted)) === 'quit';
    } catch (error) {
      usageError(line, `heph-jobs: ${(error as Error).message}`);
    } finally {
      busy = false;
    }
    if (quit || session.ended) break;
    if (interactive && !closed) rl.prompt();
  }

  stopTelling();
  // Ctrl-D leaves the cursor after the prompt.
  if (interactive && !quit) promptOutput.write('\n');
  const end = await session.end();
  if (json) emit(endObject(end));
  else write(`session ended: ${stoppedText(end.stopped)}`);
  rl.close();
  return interactive || usageErrors === 0 ? 0 : 1;
}

/** The saved history, and how to save it; null (said once) when it cannot be read. */
function openHistory(file: string, say: NodeJS.WritableStream): { lines: string[]; save(lines: readonly string[]): void } | null {
  let lines: string[];
  try {
    lines = loadHistory(file);
  } catch (error) {
    say.write(`(history is not kept: ${file} cannot be read: ${(error as Error).message})\n`);
    return null;
  }
  let failed = false;
  return {
    lines,
    save(current) {
      if (failed) return;
      try {
        saveHistory(file, current);
      } catch (error) {
        failed = true;
        say.write(`(history is not kept: ${file} cannot be written: ${(error as Error).message})\n`);
      }
    },
  };
}
