/**
 * How a value someone handed us reads in an error message, and the one integer check. Both sides
 * of the channel use them, so every "must be ...; received ..." sentence shows a value the same way.
 */

/**
 * `literal`: the value as code would write it (`"x"`, `5`, `null`), for messages about options and
 * arguments. `spoken`: with its kind in words (`the string "x"`, `the number 5`, `nothing`), for
 * messages a model reads about the JSON it sent.
 */
export type DescribeStyle = 'literal' | 'spoken';

/** Longest piece of a string (or of an object's JSON) a message shows. */
const SHOWN_CHARS = 60;

function shownString(text: string): string {
  return text.length <= SHOWN_CHARS ? JSON.stringify(text) : `${JSON.stringify(text.slice(0, SHOWN_CHARS))}… (${text.length} characters)`;
}

function shownObject(value: object): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? Object.prototype.toString.call(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}…`;
}

/** A received value, short: never the whole of a long string. */
export function describeValue(value: unknown, style: DescribeStyle = 'literal'): string {
  const spoken = style === 'spoken';
  if (value === undefined) return spoken ? 'nothing' : 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') return spoken ? `the string ${shownString(value)}` : shownString(value);
  if (typeof value === 'number') return spoken && Number.isFinite(value) ? `the number ${String(value)}` : String(value);
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object') return spoken ? 'an object' : shownObject(value);
  return `a ${typeof value}`;
}

/**
 * The one integer check: `value` when it is an integer in [min, max]. A value that is not a number
 * is a TypeError; a number that is fractional or out of range is a RangeError (STYLE 10). `name`
 * leads the message as the caller calls the thing (`option settleMs`, `read option tail`).
 */
export function checkInteger(name: string, value: unknown, min: number, max: number): number {
  const rule = `${name} must be an integer from ${min} to ${max}; received ${describeValue(value)}`;
  if (typeof value !== 'number') throw new TypeError(rule);
  if (!Number.isInteger(value) || value < min || value > max) throw new RangeError(rule);
  return value;
}
