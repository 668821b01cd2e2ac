import { describe, expect, it } from 'vitest';
import { OutputRing, renderLine, visibleRange, type OutputLimits, type OutputLine } from '../../supervisor/output/index.js';
import { prng } from '../helpers/random.js';

const ALL = { since: -1, maxBytes: Number.MAX_SAFE_INTEGER } as const;

/** What a reader sees of every completed line, in order. */
function linesOf(ring: OutputRing): Pick<OutputLine, 'seq' | 'stream' | 'text' | 'cutBytes'>[] {
  return ring.read(ALL).lines.map(({ seq, stream, text, cutBytes }) => ({ seq, stream, text, cutBytes }));
}

/** Pushes `input` to stdout cut at the given offsets, then ends the stream. */
function ingest(input: Buffer, cuts: readonly number[], limits: Partial<OutputLimits> = {}): OutputRing {
  const ring = new OutputRing(limits);
  let from = 0;
  for (const at of [...cuts, input.length]) {
    ring.push('stdout', input.subarray(from, at));
    from = at;
  }
  ring.end('stdout');
  return ring;
}

/**
 * An independent model of SPEC 5 line handling, computed on the whole input at once: split on
 * `\n`, drop the `\r` of `\r\n`, keep what follows the last bare `\r`, cut at the line limit.
 */
function modelLines(input: Buffer, maxLineBytes: number): { text: string; cutBytes: number }[] {
  const out: { text: string; cutBytes: number }[] = [];
  let start = 0;
  while (start < input.length) {
    let nl = input.indexOf(0x0a, start);
    const last = nl < 0;
    if (last) nl = input.length;
    let end = nl;
    if (!last && end > start && input[end - 1] === 0x0d) end--;
    const [s, e] = visibleRange(input, start, end);
    const len = Math.min(e - s, maxLineBytes);
    const cutBytes = e - s - len;
    out.push({ text: renderLine(input, { start: s, end: s + len, open: cutBytes > 0 }), cutBytes });
    start = nl + 1;
  }
  return out;
}


const PIECES: readonly Buffer[] = [
  Buffer.from('a'),
  Buffer.from('bc'),
  Buffer.from('xyz12'),
  Buffer.from('\r'),
  Buffer.from('\n'),
  Buffer.from('\r\n'),
  Buffer.from('\x1b[31m'),
  Buffer.from('\x1b]0;t\x07'),
  Buffer.from('é'),
  Buffer.from('€'),
  Buffer.from([0xff]),
  Buffer.from([0x00]),
  Buffer.from('\t'),
];

function randomInput(rand: () => number, pieces: number): Buffer {
  const parts: Buffer[] = [];
  for (let k = 0; k < pieces; k++) parts.push(PIECES[Math.floor(rand() * PIECES.length)]!);
  return Buffer.concat(parts);
}

describe('renderLine', () => {
  const r = (bytes: string | number[], open = false): string =>
    renderLine(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : Buffer.from(bytes), { open });

  it('keeps only the text after the last bare \\r (progress bars)', () => {
    expect(r('10%\r20%\r30%')).toBe('30%');
    expect(r('abc\r')).toBe('abc'); // nothing has overwritten it yet
    expect(r('abc\r\r')).toBe('abc');
    expect(r('\r\x1b[Kdone')).toBe('done');
    expect(r('plain')).toBe('plain');
  });

  it('removes colour escapes, OSC titles and other escape sequences', () => {
    expect(r('\x1b[31mred\x1b[0m')).toBe('red');
    expect(r('\x1b[1;38;5;208mbold\x1b[m!')).toBe('bold!');
    expect(r('\x1b]0;my title\x07after')).toBe('after');
    expect(r('\x1b]2;title\x1b\\after')).toBe('after'); // ST terminator
    expect(r('\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\')).toBe('link'); // hyperlink
    expect(r('\x1b(Bx\x1b7y\x1b8z\x1b=')).toBe('xyz'); // nF and two-byte escapes
    expect(r('\x1bPtmux;data\x1b\\ok')).toBe('ok'); // DCS
    expect(r('\x1b]0;unterminated\x1b[32mgreen')).toBe('green'); // ESC aborts the OSC string
    expect(r('text\x1b[')).toBe('text'); // sequence cut off by the end of the line
  });

  it('shows a malformed escape and control bytes as \\xHH', () => {
    expect(r('a\x1b\x01b')).toBe('a\\x1B\\x01b');
    expect(r('a\x1b[1\x02m')).toBe('a\\x02m'); // the CSI is dropped up to the offending byte
    expect(r([0x61, 0x00, 0x62])).toBe('a\\x00b');
    expect(r([0x08, 0x7f, 0x1f])).toBe('\\x08\\x7F\\x1F');
  });

  it('keeps tabs and valid multi-byte UTF-8', () => {
    expect(r('a\tb')).toBe('a\tb');
    const text = 'é € 😀 日本語 ñ';
    expect(renderLine(Buffer.from(text, 'utf8'))).toBe(text);
  });

  it('escapes invalid UTF-8 byte by byte', () => {
    expect(r([0x66, 0xff, 0x6f])).toBe('f\\xFFo');
    expect(r([0xc0, 0x80])).toBe('\\xC0\\x80'); // overlong NUL
    expect(r([0xed, 0xa0, 0x80])).toBe('\\xED\\xA0\\x80'); // surrogate
    expect(r([0xf4, 0x90, 0x80, 0x80])).toBe('\\xF4\\x90\\x80\\x80'); // above U+10FFFF
    expect(r([0xe2, 0x82, 0x61])).toBe('\\xE2\\x82a'); // truncated, then text
    expect(r([0x80])).toBe('\\x80'); // lone continuation byte
  });

  it('leaves out a character broken off at the end of an open line, and shows it in a closed one', () => {
    expect(r([0x61, 0xe2, 0x82], true)).toBe('a');
    expect(r([0x61, 0xe2, 0x82], false)).toBe('a\\xE2\\x82');
    expect(r([0x61, 0xff], true)).toBe('a\\xFF'); // invalid, not merely incomplete
  });

  it('renders only the given range', () => {
    const raw = Buffer.from('xx\x1b[1mab\x1b[0myy');
    expect(renderLine(raw, { start: 2, end: raw.length - 2 })).toBe('ab');
  });
});

describe('OutputRing line assembly', () => {
  it('turns CRLF into a newline, also when \\r and \\n arrive in different chunks', () => {
    const ring = new OutputRing();
    ring.push('stdout', Buffer.from('one\r\ntwo\r'));
    ring.push('stdout', Buffer.from('\nthree\r'));
    ring.push('stdout', Buffer.from('\n'));
    expect(linesOf(ring).map((l) => l.text)).toEqual(['one', 'two', 'three']);
  });

  it('does not count the \\r of \\r\\n against the line limit', () => {
    for (const split of [0, 4, 5, 6]) {
      const input = Buffer.from('12345\r\n');
      const ring = ingest(input, split === 0 ? [] : [split], { maxLineBytes: 5 });
      expect(linesOf(ring), `split at ${split}`).toEqual([{ seq: 0, stream: 'stdout', text: '12345', cutBytes: 0 }]);
    }
  });

  it('keeps the last state of a progress bar', () => {
    const ring = new OutputRing();
    ring.push('stdout', Buffer.from('10%\r20%\r30%\n'));
    expect(linesOf(ring)).toEqual([{ seq: 0, stream: 'stdout', text: '30%', cutBytes: 0 }]);
  });

  it('does not cut a long progress bar that keeps rewriting itself', () => {
    const ring = new OutputRing({ maxLineBytes: 64 });
    for (let i = 0; i <= 5000; i++) ring.push('stdout', Buffer.from(`\rprogress ${i}/5000 ${'#'.repeat(i % 40)}`));
    expect(ring.read().lines).toEqual([
      { seq: 0, stream: 'stdout', text: 'progress 5000/5000 ', cutBytes: 0, partial: true },
    ]);
    ring.push('stdout', Buffer.from('\r\x1b[Kdone\n'));
    expect(linesOf(ring)).toEqual([{ seq: 0, stream: 'stdout', text: 'done', cutBytes: 0 }]);
    expect(ring.stats().truncatedLines).toBe(0);
    // Control: without \r the same bytes are one line, and it is cut.
    const plain = new OutputRing({ maxLineBytes: 64 });
    plain.push('stdout', Buffer.from(`${'x'.repeat(100)}\n`));
    expect(linesOf(plain)[0]!.cutBytes).toBe(36);
  });

  it('keeps a multi-byte character split across chunks', () => {
    const text = 'prix: 5 € 😀\n';
    const input = Buffer.from(text, 'utf8');
    for (let at = 1; at < input.length; at++) {
      const ring = ingest(input, [at]);
      expect(linesOf(ring).map((l) => l.text), `split at ${at}`).toEqual(['prix: 5 € 😀']);
    }
  });

  it('gives identical lines however the bytes are split into chunks', () => {
    const input = Buffer.concat([
      Buffer.from('plain line\r\n\x1b[31mred\x1b[0m and \x1b]0;title\x07text\n'),
      Buffer.from('10%\r20%\r30%\r\n'),
      Buffer.from('tab\there, é, € and 😀\n'),
      Buffer.from([0x66, 0xff, 0x6f, 0x00, 0x0a]),
      Buffer.from(`${'long '.repeat(10)}\r${'y'.repeat(30)}\r\n`),
      Buffer.from('unfinished last line €'),
    ]);
    for (const limits of [{}, { maxLineBytes: 8 }, { maxLineBytes: 29 }]) {
      const whole = linesOf(ingest(input, [], limits));
      expect(whole.length).toBe(7);
      // One split at every position, then every byte on its own.
      for (let at = 1; at < input.length; at++) {
        expect(linesOf(ingest(input, [at], limits)), `split at ${at}, ${JSON.stringify(limits)}`).toEqual(whole);
      }
      const bytes = Array.from({ length: input.length - 1 }, (_, k) => k + 1);
      expect(linesOf(ingest(input, bytes, limits))).toEqual(whole);
    }
    const whole = linesOf(ingest(input, []));
    expect(whole.map((l) => l.text)).toEqual([
      'plain line',
      'red and text',
      '30%',
      'tab\there, é, € and 😀',
      'f\\xFFo\\x00',
      'y'.repeat(30),
      'unfinished last line €',
    ]);
  });

  it('matches a whole-input model for random inputs, limits and chunkings', () => {
    const rand = prng(0x5eed);
    let cases = 0;
    for (let round = 0; round < 400; round++) {
      const input = randomInput(rand, 1 + Math.floor(rand() * 40));
      const maxLineBytes = 1 + Math.floor(rand() * 12);
      const cuts = new Set<number>();
      const pieces = Math.floor(rand() * 6);
      for (let k = 0; k < pieces; k++) cuts.add(1 + Math.floor(rand() * Math.max(1, input.length - 1)));
      const sorted = [...cuts].filter((c) => c < input.length).sort((a, b) => a - b);
      const got = linesOf(ingest(input, sorted, { maxLineBytes })).map(({ text, cutBytes }) => ({ text, cutBytes }));
      expect(got, `input ${JSON.stringify(input.toString('latin1'))}, limit ${maxLineBytes}, cuts ${sorted}`).toEqual(
        modelLines(input, maxLineBytes),
      );
      cases++;
    }
    expect(cases).toBe(400);
    // Control: the oracle notices a wrong answer (a model with another limit disagrees).
    const input = Buffer.from('abcdefghij\n');
    expect(linesOf(ingest(input, [3], { maxLineBytes: 4 })).map(({ text, cutBytes }) => ({ text, cutBytes }))).not.toEqual(
      modelLines(input, 5),
    );
  });

  it('shows an unfinished last line as partial, then as a normal line', () => {
    const ring = new OutputRing();
    ring.push('stdout', Buffer.from('first\nsecond ha'));
    let read = ring.read();
    expect(read.lines).toEqual([
      { seq: 0, stream: 'stdout', text: 'first', cutBytes: 0 },
      { seq: 1, stream: 'stdout', text: 'second ha', cutBytes: 0, partial: true },
    ]);
    expect(read.next).toBe(0);
    expect(read.totalLines).toBe(1);
    ring.push('stdout', Buffer.from('lf'));
    expect(ring.read().lines.at(-1)).toEqual({ seq: 1, stream: 'stdout', text: 'second half', cutBytes: 0, partial: true });
    ring.push('stdout', Buffer.from(' done\nthird'));
    ring.end('stdout');
    read = ring.read();
    expect(read.lines.map((l) => [l.seq, l.text, l.partial])).toEqual([
      [0, 'first', undefined],
      [1, 'second half done', undefined],
      [2, 'third', undefined],
    ]);
    expect(read.next).toBe(2);
    expect(read.totalLines).toBe(3);
  });

  it('holds at most maxLineBytes of a 1 MB line without a newline, and counts the rest as cut', () => {
    const MB = 1024 * 1024;
    const ring = new OutputRing();
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let maxPending = 0;
    for (let sent = 0; sent < MB; sent += chunk.length) {
      ring.push('stdout', chunk);
      maxPending = Math.max(maxPending, ring.stats().pendingBytes);
    }
    expect(maxPending).toBe(8192);
    const partial = ring.read().lines;
    expect(partial).toHaveLength(1);
    expect(partial[0]).toMatchObject({ seq: 0, text: 'x'.repeat(8192), cutBytes: MB - 8192, partial: true });
    ring.push('stdout', Buffer.from('\n'));
    expect(linesOf(ring)).toEqual([{ seq: 0, stream: 'stdout', text: 'x'.repeat(8192), cutBytes: MB - 8192 }]);
    expect(ring.stats()).toMatchObject({ truncatedLines: 1, truncatedBytes: MB - 8192, retainedBytes: 8192, pendingBytes: 0 });

    // The same line in one chunk takes the in-chunk path and gives the same result.
    const whole = new OutputRing();
    whole.push('stdout', Buffer.concat([Buffer.alloc(MB, 'x'), Buffer.from('\n')]));
    expect(linesOf(whole)).toEqual(linesOf(ring));
    // Control: a short partial line is measured, so the pending figure is not a constant.
    const short = new OutputRing();
    short.push('stdout', Buffer.from('abc'));
    expect(short.stats().pendingBytes).toBe(3);
  });

  it('cuts a multi-byte character at the line limit without showing half of it', () => {
    const ring = new OutputRing({ maxLineBytes: 5 });
    ring.push('stdout', Buffer.from('abcd€\n')); // € is 3 bytes: 2 of them fall past the limit
    expect(linesOf(ring)).toEqual([{ seq: 0, stream: 'stdout', text: 'abcd', cutBytes: 2 }]);
  });
});
