/**
 * Read-time rendering of stored output lines (SPEC 5): raw bytes in, text for a model out.
 *
 * Ingest stores raw bytes and never looks inside a line; everything here runs lazily, only for the
 * lines a read returns. In order:
 *   1. the bare-`\r` rule: trailing `\r` bytes are dropped (the `\r` of `\r\n`, or a cursor return
 *      nothing has overwritten yet), then only the text after the last remaining `\r` is kept;
 *   2. ANSI escape sequences are removed (CSI, OSC/DCS/SOS/PM/APC strings, nF and two-byte escapes);
 *   3. invalid UTF-8 and control bytes (0x00-0x1F except TAB, and 0x7F) become `\xHH`.
 */

const TAB = 0x09;
const BEL = 0x07;
const CR = 0x0d;
const ESC = 0x1b;
const DEL = 0x7f;

/** `\xHH` for every byte value, uppercase hex. */
const HEX: readonly string[] = Array.from(
  { length: 256 },
  (_, b) => `\\x${b.toString(16).toUpperCase().padStart(2, '0')}`,
);

export interface RenderOptions {
  /** First byte of the line in `raw`. Default: 0. */
  start?: number;
  /** End of the line in `raw` (exclusive). Default: `raw.length`. */
  end?: number;
  /**
   * The line does not end where the bytes end: it was cut by the line limit, or it is a partial
   * line still arriving. A UTF-8 character or escape sequence broken off at the end is then left
   * out instead of being shown as `\xHH` bytes. Default: false.
   */
  open?: boolean;
}

/**
 * Where the visible text of a line starts and ends once the bare-`\r` rule is applied: trailing
 * `\r` bytes are dropped, then the text after the last `\r` is what a terminal would show.
 */
export function visibleRange(raw: Buffer, start: number, end: number): [start: number, end: number] {
  while (end > start && raw[end - 1] === CR) end--;
  // A scan by index: a Buffer view per line to call lastIndexOf on costs more than the scan.
  for (let i = end - 1; i >= start; i--) {
    if (raw[i] === CR) {
      start = i + 1;
      break;
    }
  }
  return [start, end];
}

/** Renders one raw line (see the file comment). Never throws; any bytes give some text. */
export function renderLine(raw: Buffer, options: RenderOptions = {}): string {
  const open = options.open === true;
  const [start, end] = visibleRange(raw, options.start ?? 0, options.end ?? raw.length);
  let out = '';
  let run = start; // start of the pending run of bytes that are copied as they are
  let i = start;
  while (i < end) {
    const b = raw[i]!;
    if ((b >= 0x20 && b < DEL) || b === TAB) {
      i++;
      continue;
    }
    if (b >= 0x80) {
      const n = utf8Length(raw, i, end);
      if (n > 0) {
        i += n;
        continue;
      }
      if (n < 0 && open) break; // a character broken off by the cut, or still arriving
    } else if (b === ESC) {
      const n = escapeLength(raw, i, end);
      if (n > 0) {
        if (i > run) out += raw.toString('utf8', run, i);
        i += n;
        run = i;
        continue;
      }
    }
    if (i > run) out += raw.toString('utf8', run, i);
    out += HEX[b]!;
    i++;
    run = i;
  }
  if (i > run) out += raw.toString('utf8', run, i);
  return out;
}

/**
 * The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`, cut at a character
 * boundary (never inside a multi-byte character or a surrogate pair).
 */
export function clipUtf8(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes) return text; // UTF-16 unit -> at most 3 UTF-8 bytes
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let k = Math.max(0, maxBytes);
  while (k > 0 && (bytes[k]! & 0xc0) === 0x80) k--;
  return bytes.toString('utf8', 0, k);
}

/**
 * Length of the valid UTF-8 sequence whose lead byte (>= 0x80) is at `raw[i]`: n > 0 if valid,
 * 0 if invalid, -1 if what there is forms a valid prefix that `end` cut off. Follows Unicode
 * table 3-7 (no overlong forms, no surrogates, nothing above U+10FFFF).
 */
function utf8Length(raw: Buffer, i: number, end: number): number {
  const b = raw[i]!;
  let lo = 0x80;
  let hi = 0xbf;
  let need: number;
  if (b < 0xc2) return 0; // continuation byte or overlong two-byte lead
  if (b < 0xe0) need = 1;
  else if (b < 0xf0) {
    need = 2;
    if (b === 0xe0) lo = 0xa0;
    else if (b === 0xed) hi = 0x9f;
  } else if (b < 0xf5) {
    need = 3;
    if (b === 0xf0) lo = 0x90;
    else if (b === 0xf4) hi = 0x8f;
  } else return 0;
  for (let k = 1; k <= need; k++) {
    if (i + k >= end) return -1;
    const c = raw[i + k]!;
    if (c < lo || c > hi) return 0;
    lo = 0x80;
    hi = 0xbf;
  }
  return need + 1;
}

/**
 * How many bytes the escape sequence at `raw[i]` (an ESC) spans, to be removed; 0 when the ESC
 * starts no sequence (it is then shown as `\x1B`). A sequence the line ends inside is removed up
 * to the end of the line, as a terminal would swallow it.
 */
function escapeLength(raw: Buffer, i: number, end: number): number {
  if (i + 1 >= end) return 1;
  const b = raw[i + 1]!;
  if (b === 0x5b) {
    // CSI: ESC [ parameter/intermediate bytes (0x20-0x3F) final byte (0x40-0x7E). A malformed one
    // is dropped up to the offending byte, which is then rendered on its own.
    let j = i + 2;
    while (j < end && raw[j]! >= 0x20 && raw[j]! <= 0x3f) j++;
    if (j < end && raw[j]! >= 0x40 && raw[j]! <= 0x7e) j++;
    return j - i;
  }
  if (b === 0x5d || b === 0x50 || b === 0x58 || b === 0x5e || b === 0x5f) {
    // OSC ], DCS P, SOS X, PM ^, APC _: a string ended by BEL or ST (ESC \). Another ESC inside
    // aborts the string, as in xterm, and starts a sequence of its own.
    for (let j = i + 2; j < end; j++) {
      const c = raw[j]!;
      if (c === BEL) return j + 1 - i;
      if (c === ESC) return raw[j + 1] === 0x5c && j + 1 < end ? j + 2 - i : j - i;
    }
    return end - i;
  }
  if (b >= 0x20 && b <= 0x2f) {
    // nF (e.g. ESC ( B): intermediate bytes, then a final byte 0x30-0x7E.
    let j = i + 1;
    while (j < end && raw[j]! >= 0x20 && raw[j]! <= 0x2f) j++;
    if (j < end && raw[j]! >= 0x30 && raw[j]! <= 0x7e) j++;
    return j - i;
  }
  if (b >= 0x30 && b <= 0x7e) return 2; // two-byte escapes: ESC 7, ESC =, ESC M, ESC c, ...
  return 0;
}
