/**
 * Colour on a terminal: only when the stream is a TTY, and never when NO_COLOR is set to anything
 * (https://no-color.org) or the terminal says it cannot (TERM=dumb). Selection (reverse video) is
 * not colour and stays on a terminal either way.
 */

export interface Palette {
  /** A line the job wrote to stderr. */
  stderr(text: string): string;
  /** A job state (`running`, `exited 0`, `killed SIGTERM`, ...), by what it means. */
  state(state: string, text?: string): string;
  /** Less important text (notes between output lines). */
  dim(text: string): string;
}

// Each turned off by its own code (39: default colour, 22: normal intensity), not by a reset, so a
// coloured cell inside a selected (reverse video) row keeps the row's reverse.
const sgr = (on: string, off: string) => (text: string) => (text === '' ? text : `\x1b[${on}m${text}\x1b[${off}m`);
const RED = sgr('31', '39');
const GREEN = sgr('32', '39');
const YELLOW = sgr('33', '39');
const MAGENTA = sgr('35', '39');
const DIM = sgr('2', '22');

const plainText = (text: string) => text;

export const NO_COLOUR: Palette = { stderr: plainText, state: (state, text = state) => text, dim: plainText };

export const COLOUR: Palette = {
  stderr: RED,
  state(state, text = state) {
    if (state === 'running') return GREEN(text);
    if (state === 'waiting') return YELLOW(text);
    if (state === 'exited 0') return text;
    if (state.startsWith('killed') || state === 'cancelled') return MAGENTA(text);
    return RED(text); // exited non-zero, failed, lost
  },
  dim: DIM,
};

/** Whether text written to `stream` may be coloured. */
export function colourWanted(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

export function paletteFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Palette {
  return colourWanted(stream, env) ? COLOUR : NO_COLOUR;
}

/** Reverse video: the selected row of a table. */
export function reverse(text: string): string {
  return `\x1b[7m${text}\x1b[27m`;
}
