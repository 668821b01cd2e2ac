/**
 * Shell-like words: how the shell cuts a typed line into a command word and its arguments, with
 * quotes and backslash escapes resolved, and where each word starts and ends (completion and the
 * raw rest of `background` need the positions).
 */

export interface Token {
  /** The word with quotes and escapes resolved. */
  value: string;
  /** Where it starts and ends in the line. */
  start: number;
  end: number;
  /** Any part of it was quoted or escaped (a quoted "--x" is a value, not a flag). */
  quoted: boolean;
  /** An unterminated quote or a trailing backslash. */
  error?: string;
}

/**
 * The next shell-like word at or after `from`: '...' literal; "..." with the escapes \" \\ \$ \` and
 * \n \t \r (so `input 0 --text "y\n"` sends a line); \x outside quotes is x.
 */
export function nextToken(text: string, from: number): Token | null {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  if (i >= text.length) return null;
  const start = i;
  let value = '';
  let quoted = false;
  while (i < text.length && !/\s/.test(text[i]!)) {
    const c = text[i]!;
    if (c === "'") {
      quoted = true;
      const close = text.indexOf("'", i + 1);
      if (close === -1) return { value: value + text.slice(i + 1), start, end: text.length, quoted, error: "a ' quote is not closed" };
      value += text.slice(i + 1, close);
      i = close + 1;
    } else if (c === '"') {
      quoted = true;
      i++;
      for (;;) {
        if (i >= text.length) return { value, start, end: text.length, quoted, error: 'a " quote is not closed' };
        const d = text[i]!;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < text.length && '"\\$`ntr'.includes(text[i + 1]!)) {
          const next = text[i + 1]!;
          value += next === 'n' ? '\n' : next === 't' ? '\t' : next === 'r' ? '\r' : next;
          i += 2;
        } else {
          value += d;
          i++;
        }
      }
    } else if (c === '\\') {
      quoted = true;
      if (i + 1 >= text.length) return { value, start, end: text.length, quoted, error: 'the line ends with a backslash' };
      value += text[i + 1];
      i += 2;
    } else {
      value += c;
      i++;
    }
  }
  return { value, start, end: i, quoted };
}

/** Every word of `text` (for commands that take no raw rest). */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  for (let token = nextToken(text, 0); token; token = nextToken(text, token.end)) tokens.push(token);
  return tokens;
}

/** The command word and the text after it. */
export function splitCommand(line: string): { word: string; rest: string } {
  const trimmed = line.replace(/^\s+/, '');
  const match = /^(\S+)(?:\s+([\s\S]*))?$/.exec(trimmed);
  return { word: match?.[1] ?? '', rest: match?.[2] ?? '' };
}
