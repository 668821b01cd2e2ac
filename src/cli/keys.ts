/**
 * Taking a terminal's keys for a while (a one-key question, the live watch, following a job's
 * output): whoever listened for keypresses on the input before (the shell's readline, or an outer
 * taker) is detached, the terminal is put in raw mode, and both are given back on release, so a key
 * meant for the taker goes nowhere else. Takers nest: each gives back what it found.
 */
import { emitKeypressEvents } from 'node:readline';

/** A key as readline's keypress decoder names it. */
export interface Key {
  name?: string;
  sequence?: string;
  ctrl?: boolean;
  meta?: boolean;
  shift?: boolean;
}

/** Ctrl-C or Ctrl-D: the keys that say "no" or "stop" wherever keys are taken. */
export function isInterrupt(key: Key): boolean {
  return key.ctrl === true && (key.name === 'c' || key.name === 'd');
}

/** A key that types something (a letter, a digit, Enter), as opposed to arrows, function keys and the like. */
export function isTyping(key: Key): boolean {
  if (key.name === 'return' || key.name === 'enter') return true;
  return key.sequence !== undefined && key.sequence.length === 1 && key.sequence >= ' ' && key.sequence !== '\x7f';
}

/** One read from the terminal that holds more than one key: a paste, or keys typed ahead. */
function isBurst(chunk: string | Buffer): boolean {
  const text = typeof chunk === 'string' ? chunk : chunk.toString('latin1');
  // An escape sequence (an arrow, a function key) is one key however many bytes it has.
  return text.length > 1 && !/^\x1b[[O]?[0-9;]*[A-Za-z~]$/.test(text);
}

/**
 * Sends every key of `input` to `onKey` until the returned release is called; `onEnd` is called if
 * the input ends meanwhile. Raw mode is on while the keys are taken (on a terminal). `burst` says
 * the key came with others in one read (pasted, or typed before it was asked for).
 */
export function takeKeys(input: NodeJS.ReadStream, onKey: (key: Key, burst: boolean) => void, onEnd: () => void = () => undefined): () => void {
  const saved = input.listeners('keypress') as ((...args: unknown[]) => void)[];
  input.removeAllListeners('keypress');
  emitKeypressEvents(input);
  const wasRaw = input.isTTY ? input.isRaw : false;
  const wasPaused = input.isPaused();
  let burst = false;
  // Ahead of the keypress decoder, which turns each read into keys at once.
  const onData = (chunk: string | Buffer) => {
    burst = isBurst(chunk);
  };
  input.prependListener('data', onData);
  const listener = (_text: string | undefined, key: Key | undefined) => onKey(key ?? {}, burst);
  input.on('keypress', listener);
  input.once('end', onEnd);
  if (input.isTTY) input.setRawMode(true);
  input.resume();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    input.off('keypress', listener);
    input.off('data', onData);
    input.off('end', onEnd);
    for (const previous of saved) input.on('keypress', previous);
    if (input.isTTY && !wasRaw) input.setRawMode(false);
    if (wasPaused) input.pause();
  };
}

/**
 * One key answers: `answers` maps a key's name (`y`) to its answer. Ctrl-C and Ctrl-D (and the end
 * of the input) answer null. A key that types something else writes `help` and asks again; other
 * keys (arrows, function keys) are ignored, and so are keys that came in a burst: text pasted, or
 * typed ahead before the question showed, never answers it (an `a` in `stauts` is not "always").
 * The key is echoed with the end of the line.
 */
export function askKey<A>(options: {
  input: NodeJS.ReadStream;
  output: NodeJS.WritableStream;
  question: string;
  answers: Readonly<Record<string, A>>;
  help: string;
}): Promise<A | null> {
  const { input, output, question, answers, help } = options;
  output.write(question);
  return new Promise<A | null>((resolve) => {
    const finish = (answer: A | null, echo: string) => {
      release();
      output.write(`${echo}\n`);
      resolve(answer);
    };
    const release = takeKeys(
      input,
      (key, burst) => {
        if (isInterrupt(key)) return finish(null, key.name === 'c' ? '^C' : '');
        if (burst) return;
        const name = key.name?.toLowerCase();
        if (name !== undefined && Object.hasOwn(answers, name) && !key.ctrl && !key.meta) return finish(answers[name]!, name);
        if (isTyping(key)) output.write(`\n${help}\n${question}`);
      },
      () => finish(null, ''),
    );
  });
}
