/**
 * The `heph-jobs` shell: a person uses the tools the way a model does. Each line is one command;
 * the answer is the tool's report text (or, with `--json`, one JSON object per line carrying the
 * report the text was made from). Level-2 commands ask on the terminal; "always" remembers the
 * exact action for the session. The session ends with `quit`, Ctrl-D or the end of the input, and
 * ending it stops every job.
 *
 * On a terminal: readline's line editing and history, tab completion of commands, job numbers and
 * flags, Ctrl-C clears the line. From a pipe or a file (`heph-jobs < script.txt`): the lines run in
 * order with no prompt; nobody can be asked there, so level-2 commands are refused unless `--yes`.
 */
import readline from 'node:readline';
import type { ApprovalAnswer, ApprovalRequest, ToolResult } from '../tools/index.js';
import { createTools } from '../tools/index.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import { BUILTINS, commandTable } from './command-table.js';
import { complete } from './completion.js';
import { helpText } from './help.js';
import { answerObject, endObject, errorObject, helpObject } from './json-output.js';
import { parseToolInput } from './parse-input.js';
import { splitCommand } from './tokenize.js';
import { stoppedText, type Session } from './session.js';
import { watchFrames, watchLive } from './watch.js';

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
}

export const PROMPT = 'heph-jobs> ';

/** Said when a level-2 command comes from a script (no terminal to ask on) without --yes. */
export const NOBODY_TO_ASK = 'stdin is not a terminal, so there is nobody to ask; run heph-jobs --yes to approve every action of a script';

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
    for (;;) {
      const answer = await ask(`Allow ${request.pattern}? [y]es / [n]o / [a]lways: `);
      if (answer === null) return 'deny';
      const word = answer.trim().toLowerCase();
      if (word === 'y' || word === 'yes') return 'once';
      if (word === 'a' || word === 'always') return 'always';
      if (word === 'n' || word === 'no') return 'deny';
      promptOutput.write('Answer y (yes, this once), n (no) or a (always: this exact action, for the rest of the session).\n');
    }
  }

  /** The answer typed, or null for Ctrl-C / Ctrl-D. The answer stays out of the command history. */
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

  const tools = createTools(runtime, { approve });
  const table = commandTable(tools.all);

  function jobIds(): number[] {
    return runtime.list().map((job) => job.id);
  }

  rl = readline.createInterface({
    input,
    ...(interactive ? { output: promptOutput } : {}),
    terminal: interactive && promptOutput.isTTY === true,
    historySize: 1000,
    removeHistoryDuplicates: true,
    prompt: PROMPT,
    ...(interactive ? { completer: (line: string) => complete(line, table, jobIds()) } : {}),
  });

  const queue: string[] = [];
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
    queue.push(line);
    notify();
  });
  rl.on('close', () => {
    closed = true;
    onClose?.();
    notify();
  });
  rl.on('SIGINT', () => {
    // Ctrl-C: a question is answered "no"; otherwise the line is cleared, as in bash.
    if (question) {
      question.abort();
      return;
    }
    const empty = rl.line.length === 0;
    (rl as unknown as { clearLine(): void }).clearLine();
    if (busy) return;
    if (empty) promptOutput.write('(To end the session and every job, press Ctrl-D or type quit.)\n');
    rl.prompt();
  });

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

  async function watch(): Promise<void> {
    const empty = 'no jobs yet: background CMD starts one';
    if (interactive && input.isTTY && output.isTTY && !json) {
      await watchLive({ runtime, input, output, intervalMs: options.intervalMs, empty, footer: 'press any key to return to the shell' });
    } else {
      await watchFrames({ runtime, output, json, intervalMs: options.intervalMs, empty, until: () => true });
    }
  }

  /** Runs one line. Answers 'quit' when the line ends the session. */
  async function execute(line: string): Promise<'quit' | undefined> {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return undefined;
    const { word, rest } = splitCommand(trimmed);
    if (word === 'quit' || word === 'exit') return 'quit';
    if (word === 'help' || word === '?') {
      const text = helpText(rest.trim(), table);
      if (text === null) usageError(line, `help: there is no command ${JSON.stringify(rest.trim())}; help lists them`);
      else if (json) emit(helpObject(text));
      else write(text);
      return undefined;
    }
    if (word === 'watch') {
      if (rest.trim() !== '') usageError(line, 'watch takes no arguments; usage: watch');
      else await watch();
      return undefined;
    }
    if (word === '/job-kill') {
      const id = rest.trim();
      answer(word, '/job-kill', { id }, await tools.userKillCall(id));
      return undefined;
    }
    const tool = table.get(word);
    if (!tool) {
      usageError(line, `unknown command ${JSON.stringify(word)}; the commands are ${[...table.keys(), ...BUILTINS].join(', ')} (help explains them)`);
      return undefined;
    }
    const parsed = parseToolInput(tool, rest, word);
    if (!parsed.ok) {
      usageError(line, parsed.problem);
      return undefined;
    }
    answer(word, tool.name, parsed.input, await tool.call(parsed.input));
    return undefined;
  }

  function answer(word: string, tool: string, input: unknown, result: ToolResult): void {
    if (json) emit(answerObject(word, tool, input, result));
    else write(result.text);
  }

  // --- the loop ---------------------------------------------------------------------------------

  if (interactive) {
    promptOutput.write(
      `heph-jobs ${options.version}: background jobs that end with this session (at most ${runtime.settings.maxJobs} at once, in ${runtime.settings.cwd}).\n` +
        'help lists the commands; quit or Ctrl-D ends the session and every job.\n',
    );
    rl.prompt();
  }
  let quit = false;
  for (;;) {
    while (queue.length === 0 && !closed) await new Promise<void>((resolve) => (wake = resolve));
    const line = queue.shift();
    if (line === undefined) break;
    busy = true;
    try {
      quit = (await execute(line)) === 'quit';
    } catch (error) {
      usageError(line, `heph-jobs: ${(error as Error).message}`);
    } finally {
      busy = false;
    }
    if (quit || session.ended) break;
    if (interactive && !closed) rl.prompt();
  }

  // Ctrl-D leaves the cursor after the prompt.
  if (interactive && !quit) promptOutput.write('\n');
  const end = await session.end();
  if (json) emit(endObject(end));
  else write(`session ended: ${stoppedText(end.stopped)}`);
  rl.close();
  return interactive || usageErrors === 0 ? 0 : 1;
}
