import { describe, expect, it } from 'vitest';
import { DEFAULT_OUTPUT_LIMITS, OutputRing, type OutputLimits, type StreamName } from '../../supervisor/output/index.js';
import { prng } from '../helpers/random.js';

const ALL = { since: -1, maxBytes: Number.MAX_SAFE_INTEGER } as const;

/** A ring holding lines `line 0` ... `line n-1`, pushed in chunks of `perChunk` lines. */
function numbered(n: number, perChunk = 1, limits: Partial<OutputLimits> = {}): OutputRing {
  const ring = new OutputRing(limits);
  for (let i = 0; i < n; i += perChunk) {
    let text = '';
    for (let k = i; k < Math.min(n, i + perChunk); k++) text += `line ${k}\n`;
    ring.push('stdout', Buffer.from(text));
  }
  return ring;
}

const seqs = (lines: readonly { seq: number }[]): number[] => lines.map((l) => l.seq);
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);

describe('OutputRing limits', () => {
  it('has the SPEC 5 defaults', () => {
    expect(DEFAULT_OUTPUT_LIMITS).toEqual({ maxLines: 2000, maxLineBytes: 8192, maxBytes: 4 * 1024 * 1024, headLines: 20 });
    expect(new OutputRing().limits).toEqual(DEFAULT_OUTPUT_LIMITS);
  });

  it('rejects limits that are not positive integers, naming the option, the range and the value', () => {
    expect(() => new OutputRing({ maxLines: 0 })).toThrow(RangeError);
    expect(() => new OutputRing({ maxLines: 0 })).toThrow(/maxLines must be an integer from 1 to \d+; received 0/);
    expect(() => new OutputRing({ maxLines: 1.5 })).toThrow(/maxLines .*received 1\.5/);
    expect(() => new OutputRing({ maxBytes: -1 })).toThrow(/maxBytes .*received -1/);
    expect(() => new OutputRing({ maxLineBytes: Number.NaN })).toThrow(/maxLineBytes .*received NaN/);
    expect(() => new OutputRing({ headLines: -1 })).toThrow(/headLines must be an integer from 0 to 2000; received -1/);
    expect(() => new OutputRing({ maxLineBytes: 2000, maxBytes: 1000 })).toThrow(/maxLineBytes must be an integer from 1 to 1000; received 2000/);
    expect(() => new OutputRing({ maxLines: '5' as unknown as number })).toThrow(TypeError);
    expect(() => new OutputRing({ maxLines: 1, maxLineBytes: 1, maxBytes: 1, headLines: 0 })).not.toThrow();
  });

  it('rejects bad read options and unknown streams', () => {
    const ring = numbered(3);
    expect(() => ring.read({ tail: -1 })).toThrow(/tail must be an integer from 0/);
    expect(() => ring.read({ since: -2 })).toThrow(/since must be an integer from -1/);
    expect(() => ring.read({ maxBytes: 0 })).toThrow(RangeError);
    expect(() => ring.push('stdin' as StreamName, Buffer.from('x'))).toThrow(/stream must be 'stdout' or 'stderr'; received 'stdin'/);
  });
});

describe('OutputRing tail reads', () => {
  it('returns the last 50 of 5000 lines and says how many came before', () => {
    const ring = numbered(5000);
    const read = ring.read();
    expect(seqs(read.lines)).toEqual(range(4950, 5000));
    expect(read.lines[0]).toEqual({ seq: 4950, stream: 'stdout', text: 'line 4950', cutBytes: 0 });
    expect(read).toMatchObject({ earlier: 4950, dropped: 3000, next: 4999, totalLines: 5000, limitedByBytes: false });
  });

  it('keeps 2000 lines: the first 3000 of 5000 are dropped', () => {
    const ring = numbered(5000);
    const read = ring.read({ tail: 2000 });
    expect(seqs(read.lines)).toEqual(range(3000, 5000));
    expect(read.earlier).toBe(3000);
    expect(read.dropped).toBe(3000);
    expect(seqs(ring.read({ tail: 5000 }).lines)).toEqual(range(3000, 5000));
    expect(ring.stats()).toMatchObject({ totalLines: 5000, droppedLines: 3000, retainedLines: 2000 });
  });

  it('keeps the first 20 lines as the head after the ring wraps', () => {
    const ring = numbered(5000, 7);
    const read = ring.read();
    expect(seqs(read.head)).toEqual(range(0, 20));
    expect(read.head.map((l) => l.text)).toEqual(range(0, 20).map((k) => `line ${k}`));
    // When the tail reaches back to the start, the head is not repeated.
    const short = numbered(30);
    expect(seqs(short.read().lines)).toEqual(range(0, 30));
    expect(short.read().head).toEqual([]);
    // Head lines outside the tail window are still reported.
    expect(seqs(short.read({ tail: 15 }).head)).toEqual(range(0, 15));
  });

  it('takes the same result from one big chunk as from many small ones', () => {
    const big = numbered(10_000, 10_000);
    const small = numbered(10_000, 1);
    expect(big.read({ tail: 2000 })).toEqual(small.read({ tail: 2000 }));
    expect(big.stats()).toEqual(small.stats());
  });

  it('tags stderr and stdout lines and keeps the order in which they were read', () => {
    const ring = new OutputRing();
    ring.push('stdout', Buffer.from('out 1\nout 2 st'));
    ring.push('stderr', Buffer.from('err 1\n'));
    ring.push('stdout', Buffer.from('arts\n'));
    ring.push('stderr', Buffer.from('err 2 pending'));
    expect(ring.read().lines).toEqual([
      { seq: 0, stream: 'stdout', text: 'out 1', cutBytes: 0 },
      { seq: 1, stream: 'stderr', text: 'err 1', cutBytes: 0 },
      { seq: 2, stream: 'stdout', text: 'out 2 starts', cutBytes: 0 },
      { seq: 3, stream: 'stderr', text: 'err 2 pending', cutBytes: 0, partial: true },
    ]);
  });

  it('shows the partial lines of both streams in the order they started', () => {
    const ring = new OutputRing();
    ring.push('stderr', Buffer.from('e-start'));
    ring.push('stdout', Buffer.from('o-start'));
    expect(ring.read().lines.map((l) => [l.seq, l.stream, l.text, l.partial])).toEqual([
      [0, 'stderr', 'e-start', true],
      [1, 'stdout', 'o-start', true],
    ]);
    ring.end('stdout');
    ring.end('stderr');
    expect(ring.read().lines.map((l) => [l.seq, l.stream, l.text, l.partial])).toEqual([
      [0, 'stdout', 'o-start', undefined],
      [1, 'stderr', 'e-start', undefined],
    ]);
  });
});

describe('OutputRing cursor reads', () => {
  it('reports lines after a cursor and how many fell off in between', () => {
    const ring = numbered(10_000, 100);
    const fromStart = ring.read({ since: -1 });
    expect(fromStart.dropped).toBe(8000);
    expect(fromStart.earlier).toBe(8000);
    expect(seqs(fromStart.lines)).toEqual(range(8000, 10_000));
    expect(fromStart.next).toBe(9999);
    expect(seqs(fromStart.head)).toEqual(range(0, 20)); // kept although they fell off the ring

    expect(ring.read({ since: 100 })).toMatchObject({ dropped: 7899, earlier: 8000 });
    expect(ring.read({ since: 100 }).head).toEqual([]);
    const recent = ring.read({ since: 8499 });
    expect(recent.dropped).toBe(0);
    expect(seqs(recent.lines)).toEqual(range(8500, 10_000));
    expect(ring.read({ since: 9999 })).toMatchObject({ lines: [], dropped: 0, next: 9999, earlier: 10_000 });
  });

  it('never skips or repeats a line when reading with the cursor in pages', () => {
    const ring = new OutputRing({ maxLines: 100 });
    const seen: number[] = [];
    let cursor = -1;
    let dropped = 0;
    for (let i = 0; i < 1000; i++) {
      ring.push(i % 3 === 0 ? 'stderr' : 'stdout', Buffer.from(`l${i}\n`));
      if (i % 7 === 0) ring.push('stdout', Buffer.from('half')); // a partial line; completed by the next stdout push
      if (i % 50 === 0) {
        for (;;) {
          const read = ring.read({ since: cursor, limit: 30 });
          dropped += read.dropped;
          for (const line of read.lines) if (line.partial === undefined) seen.push(line.seq);
          if (read.next === cursor) break;
          cursor = read.next;
        }
      }
    }
    const total = ring.lineCount;
    const final = ring.read({ since: cursor, limit: 1000 });
    for (const line of final.lines) if (line.partial === undefined) seen.push(line.seq);
    dropped += final.dropped;
    expect(seen.length + dropped).toBe(total);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });

  it('limits a cursor read to N lines, partial lines only when it reaches the end', () => {
    const ring = numbered(10);
    ring.push('stdout', Buffer.from('tail'));
    const page = ring.read({ since: 2, limit: 3 });
    expect(seqs(page.lines)).toEqual([3, 4, 5]);
    expect(page.next).toBe(5);
    const rest = ring.read({ since: 5, limit: 100 });
    expect(rest.lines.map((l) => [l.seq, l.partial])).toEqual([
      [6, undefined],
      [7, undefined],
      [8, undefined],
      [9, undefined],
      [10, true],
    ]);
    expect(rest.next).toBe(9); // a partial line does not advance the cursor
  });
});

describe('OutputRing byte bounds', () => {
  it('cuts a read at a line boundary when it exceeds maxBytes', () => {
    const ring = numbered(100); // "line 90" .. "line 99" are 7 bytes each
    const tail = ring.read({ maxBytes: 30 });
    expect(seqs(tail.lines)).toEqual([96, 97, 98, 99]);
    expect(tail).toMatchObject({ limitedByBytes: true, earlier: 96, next: 99, head: [] });
    const cursor = ring.read({ since: 89, maxBytes: 30 });
    expect(seqs(cursor.lines)).toEqual([90, 91, 92, 93]);
    expect(cursor).toMatchObject({ limitedByBytes: true, next: 93 });
    expect(ring.read({ since: 89, maxBytes: 70 }).limitedByBytes).toBe(false);
  });

  it('cuts a single line that exceeds maxBytes at a character boundary', () => {
    const ring = new OutputRing();
    ring.push('stdout', Buffer.from('abcd€€€\n')); // 4 + 3 x 3 bytes
    for (const [maxBytes, text] of [
      [4, 'abcd'],
      [5, 'abcd'],
      [6, 'abcd'],
      [7, 'abcd€'],
      [12, 'abcd€€'],
    ] as const) {
      const read = ring.read({ maxBytes });
      expect(read.lines, `maxBytes ${maxBytes}`).toEqual([
        { seq: 0, stream: 'stdout', text, cutBytes: 0, clippedBytes: 13 - Buffer.byteLength(text) },
      ]);
      expect(read.limitedByBytes).toBe(true);
    }
    expect(ring.read({ maxBytes: 13 }).lines[0]).toEqual({ seq: 0, stream: 'stdout', text: 'abcd€€€', cutBytes: 0 });
    // Surrogate pairs are not split either.
    const emoji = new OutputRing();
    emoji.push('stdout', Buffer.from('😀😀\n'));
    expect(emoji.read({ maxBytes: 7 }).lines[0]!.text).toBe('😀');
  });

  it('gives the head what the lines leave of the byte budget', () => {
    const ring = numbered(3000);
    const read = ring.read({ tail: 2, maxBytes: 9 + 9 + 6 + 6 + 6 });
    expect(seqs(read.lines)).toEqual([2998, 2999]);
    expect(read.head.map((l) => l.text)).toEqual(['line 0', 'line 1', 'line 2']);
    expect(read.limitedByBytes).toBe(true);
  });

  it('evicts the oldest lines to stay within maxBytes of retained line bytes', () => {
    const ring = new OutputRing({ maxBytes: 1000, maxLineBytes: 200 });
    for (let i = 0; i < 100; i++) ring.push('stdout', Buffer.from(`${String(i).padStart(3, '0')}${'.'.repeat(97)}\n`));
    const stats = ring.stats();
    expect(stats).toMatchObject({ totalLines: 100, retainedLines: 10, retainedBytes: 1000, droppedLines: 90 });
    expect(seqs(ring.read({ tail: 100 }).lines)).toEqual(range(90, 100));
    // A long line (cut to 200 bytes) pushes out two short ones.
    ring.push('stdout', Buffer.from(`${'x'.repeat(500)}\n`));
    expect(ring.stats()).toMatchObject({ retainedLines: 9, retainedBytes: 1000, droppedLines: 92, truncatedLines: 1, truncatedBytes: 300 });
    expect(seqs(ring.read({ tail: 100 }).lines)).toEqual(range(92, 101));
  });

  it('keeps the ring within both bounds for random line lengths (model check)', () => {
    let seed = 7;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let round = 0; round < 30; round++) {
      const maxLines = 1 + Math.floor(rand() * 50);
      const maxLineBytes = 1 + Math.floor(rand() * 40);
      const maxBytes = maxLineBytes + Math.floor(rand() * 300);
      const ring = new OutputRing({ maxLines, maxLineBytes, maxBytes, headLines: 0 });
      const model: string[] = [];
      let chunk = '';
      for (let i = 0; i < 300; i++) {
        const line = `${i}:${'z'.repeat(Math.floor(rand() * 60))}`.slice(0, maxLineBytes);
        model.push(line);
        chunk += `${line}\n`;
        if (rand() < 0.3) {
          ring.push('stdout', Buffer.from(chunk));
          chunk = '';
        }
      }
      ring.push('stdout', Buffer.from(chunk));
      // The model keeps the longest suffix within both bounds.
      let bytes = 0;
      let kept = 0;
      for (let k = model.length - 1; k >= 0; k--) {
        if (kept + 1 > maxLines || bytes + model[k]!.length > maxBytes) break;
        bytes += model[k]!.length;
        kept++;
      }
      const read = ring.read(ALL);
      expect(read.lines.map((l) => l.text), `round ${round}`).toEqual(model.slice(model.length - kept));
      expect(ring.stats()).toMatchObject({ retainedLines: kept, retainedBytes: bytes, droppedLines: 300 - kept });
    }
  });

  it('keeps no reference to a pushed chunk', () => {
    const ring = new OutputRing();
    const chunk = Buffer.from('alpha\nbeta\ngam');
    ring.push('stdout', chunk);
    chunk.fill('#');
    ring.push('stdout', Buffer.from('ma\n'));
    expect(ring.read().lines.map((l) => l.text)).toEqual(['alpha', 'beta', 'gamma']);
    // Control: a ring that kept views of the chunk would show the overwritten bytes.
    const view = Buffer.from('alpha\n');
    const kept = view.subarray(0, 5);
    view.fill('#');
    expect(kept.toString()).not.toBe('alpha');
  });

  it('stays bounded under a flood', () => {
    const ring = new OutputRing({ maxLines: 500, maxBytes: 64 * 1024, maxLineBytes: 1024 });
    const lines = Buffer.from(Array.from({ length: 1000 }, (_, k) => `${k}${' flood'.repeat(k % 300)}\n`).join(''));
    for (let i = 0; i < 200; i++) {
      ring.push('stdout', lines.subarray(0, 30_001));
      ring.push('stderr', lines.subarray(30_001));
      const stats = ring.stats();
      expect(stats.retainedBytes).toBeLessThanOrEqual(64 * 1024);
      expect(stats.retainedLines).toBeLessThanOrEqual(500);
      expect(stats.pendingBytes).toBeLessThanOrEqual(2 * 1024);
    }
    expect(ring.stats().bytesIn).toBe(200 * lines.length);
  });
});

describe('OutputRing throughput (rough; prints, does not assert on time)', () => {
  function measure(label: string, lineBytes: number): void {
    const CHUNK = 64 * 1024;
    const TOTAL = 256 * 1024 * 1024;
    const line = Buffer.alloc(lineBytes, 'x');
    line[lineBytes - 1] = 0x0a;
    // A source that holds whole lines and whole chunks, pushed chunk by chunk as a pipe delivers it.
    const lcm = lineBytes % CHUNK === 0 ? lineBytes : CHUNK * lineBytes;
    const source = Buffer.alloc(Math.min(lcm, 100 * CHUNK));
    for (let at = 0; at < source.length; at += lineBytes) line.copy(source, at);
    const ring = new OutputRing();
    const started = process.hrtime.bigint();
    for (let sent = 0; sent < TOTAL; ) {
      for (let at = 0; at < source.length && sent < TOTAL; at += CHUNK, sent += CHUNK) {
        ring.push('stdout', source.subarray(at, at + CHUNK));
      }
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const stats = ring.stats();
    console.log(
      `output ring, ${label}: ${(TOTAL / 1024 / 1024 / seconds).toFixed(0)} MiB/s ` +
        `(${stats.totalLines} lines, ${stats.retainedLines} kept, ${stats.retainedBytes} bytes kept)`,
    );
    expect(stats.bytesIn).toBe(TOTAL);
    expect(stats.totalLines).toBe(Math.floor(TOTAL / lineBytes));
    expect(stats.retainedBytes).toBeLessThanOrEqual(DEFAULT_OUTPUT_LIMITS.maxBytes);
  }

  it('ingests 256 MiB of 100-byte lines', () => measure('100-byte lines', 100));
  it('ingests 256 MiB of 64 KiB lines', () => measure('64 KiB lines', 64 * 1024));
});

/** The ring's storage, for the tests below: the arena and the index behind the public API. */
interface Storage {
  arena: Buffer;
  arenaBuffer: ArrayBuffer | null | undefined;
  arenaHead: number;
  arenaTail: number;
  arenaMax: number;
  offs: Float64Array;
  lens: Uint32Array;
}
/** Reads and sets them where they live: the ring's ByteArena (`arena`) and LineIndex (`index`). */
const storage = (ring: OutputRing): Storage => {
  const { arena, index } = ring as unknown as { arena: Record<string, unknown>; index: Record<string, unknown> };
  return {
    get arena() { return arena.bytes as Buffer; },
    get arenaBuffer() { return arena.resizable as ArrayBuffer | null | undefined; },
    set arenaBuffer(value) { arena.resizable = value; },
    get arenaHead() { return arena.head as number; },
    get arenaTail() { return arena.tail as number; },
    get arenaMax() { return arena.max as number; },
    set arenaMax(value) { arena.max = value; },
    get offs() { return index.offs as Float64Array; },
    get lens() { return index.lens as Uint32Array; },
  };
};

describe('OutputRing storage (one arena per ring)', () => {

  /**
   * Random lines (empty, short, long enough to be cut; `\n` or `\r\n`) in random chunks, so the
   * arena grows through several sizes while its contents wrap around its end. After every push the
   * ring must hold exactly the longest suffix of the completed lines within both bounds.
   */
  function modelCheck(seed: number, fixedArena: boolean): void {
    const rand = prng(seed);
    const maxLineBytes = 500 + Math.floor(rand() * 8000);
    const maxBytes = maxLineBytes + Math.floor(rand() * 600_000);
    const maxLines = 50 + Math.floor(rand() * 3000);
    const limits = { maxLines, maxLineBytes, maxBytes, headLines: 0 };
    const ring = new OutputRing(limits);
    if (fixedArena) storage(ring).arenaBuffer = null; // the copy-to-grow path
    const parts: Buffer[] = [];
    const model: { text: string; cutBytes: number }[] = [];
    for (let i = 0; i < 6000; i++) {
      const r = rand();
      const len = r < 0.05 ? 0 : r < 0.85 ? Math.floor(rand() * 200) : Math.floor(rand() * 3 * maxLineBytes);
      const text = `${i}:${String.fromCharCode(97 + (i % 26)).repeat(len)}`;
      parts.push(Buffer.from(text + (rand() < 0.2 ? '\r\n' : '\n')));
      model.push({ text: text.slice(0, maxLineBytes), cutBytes: Math.max(0, text.length - maxLineBytes) });
    }
    const input = Buffer.concat(parts);
    let completed = 0;
    let peakNeed = 0;
    for (let at = 0; at < input.length; ) {
      const size = 1 + Math.floor(rand() * (rand() < 0.5 ? 300 : 300_000));
      const chunk = input.subarray(at, Math.min(input.length, at + size));
      at += chunk.length;
      ring.push('stdout', Buffer.from(chunk)); // a copy, overwritten below: no reference may be kept
      for (let k = chunk.indexOf(0x0a); k >= 0; k = chunk.indexOf(0x0a, k + 1)) completed++;
      let bytes = 0;
      let kept = 0;
      for (let k = completed - 1; k >= 0; k--) {
        const n = model[k]!.text.length;
        if (kept + 1 > maxLines || bytes + n > maxBytes) break;
        bytes += n;
        kept++;
      }
      const s = storage(ring);
      expect(s.arena.length).toBeLessThanOrEqual(s.arenaMax);
      expect(s.arenaTail - s.arenaHead).toBeLessThanOrEqual(s.arena.length);
      peakNeed = Math.max(peakNeed, s.arenaTail - s.arenaHead);
      expect(ring.stats(), `seed ${seed}`).toMatchObject({ retainedLines: kept, retainedBytes: bytes, droppedLines: completed - kept });
      if (rand() < 0.2 || at === input.length) {
        const lines = ring.read(ALL).lines.filter((l) => l.partial === undefined);
        expect(lines.map(({ text, cutBytes }) => ({ text, cutBytes })), `seed ${seed}`).toEqual(model.slice(completed - kept, completed));
        expect(seqs(lines)).toEqual(range(completed - kept, completed));
      }
    }
    expect(completed).toBe(model.length);
    // Grown by doubling from 64 KiB: never more than twice what the lines needed, and within the bound.
    const s = storage(ring);
    expect(s.arena.length).toBeLessThanOrEqual(Math.min(s.arenaMax, Math.max(64 * 1024, 2 * peakNeed)));
    expect(s.arenaMax).toBe(maxBytes + 2 * maxLines);
    if (!fixedArena) expect(s.arenaBuffer).toBeInstanceOf(ArrayBuffer);
  }

  it('matches a model while the arena grows and wraps (resizable arena)', () => {
    for (let seed = 1; seed <= 6; seed++) modelCheck(seed, false);
  });

  it('matches a model while the arena grows and wraps (arena copied to grow)', () => {
    for (let seed = 11; seed <= 14; seed++) modelCheck(seed, true);
  });

  it('reads a line stored in two pieces around the end of the arena', () => {
    // maxBytes 10 and maxLines 2: the arena holds 14 bytes, so the third line runs past its end.
    const ring = new OutputRing({ maxLines: 2, maxLineBytes: 5, maxBytes: 10, headLines: 0 });
    ring.push('stdout', Buffer.from('aaaaa\n'));
    ring.push('stdout', Buffer.from('bb€\n'));
    ring.push('stdout', Buffer.from('c€d\n'));
    const s = storage(ring);
    expect(s.arena.length).toBe(14);
    const third = s.offs[2 % s.offs.length]! % s.arena.length;
    expect(third + 5).toBeGreaterThan(14); // it does wrap
    expect(ring.read().lines.map((l) => l.text)).toEqual(['bb€', 'c€d']);
    ring.push('stdout', Buffer.from('ddd\neeeee\n'));
    expect(ring.read().lines.map((l) => l.text)).toEqual(['ddd', 'eeeee']);
    expect(ring.stats()).toMatchObject({ retainedLines: 2, retainedBytes: 8, droppedLines: 3 });
  });

  it('allocates nothing in steady state: the arena and index stay the same objects', () => {
    const ring = new OutputRing();
    const short = Buffer.from(Array.from({ length: 300 }, (_, k) => `short line ${k}\n`).join(''));
    const long = Buffer.from(`${'x'.repeat(16 * 1024)}\n`.repeat(16));
    const round = (): void => {
      ring.push('stdout', long.subarray(0, 100_000)); // a partial line, completed by the next push
      ring.push('stdout', long.subarray(100_000));
      ring.push('stderr', short);
    };
    for (let i = 0; i < 50; i++) round();
    const before = { ...storage(ring) };
    expect(before.arena.length).toBe(1024 * 1024); // ~100 lines cut to 8 KiB among the last 2000
    for (let i = 0; i < 500; i++) round();
    const after = storage(ring);
    expect(after.arena).toBe(before.arena);
    expect(after.arenaBuffer).toBe(before.arenaBuffer);
    expect(after.offs).toBe(before.offs);
    expect(after.lens).toBe(before.lens);
    expect(ring.read({ tail: 1 }).lines[0]!.text).toBe('short line 299');
  });

  it('keeps a quiet job small: a 64 KiB arena, or less if the bounds allow less', () => {
    const ring = new OutputRing();
    ring.push('stdout', Buffer.from('\n\n'));
    ring.push('stdout', Buffer.from('partial'));
    expect(storage(ring).arena.length).toBeLessThanOrEqual(64 * 1024);
    ring.push('stdout', Buffer.from(' line\nand another\n'));
    expect(storage(ring).arena.length).toBe(64 * 1024);
    expect(ring.read().lines.map((l) => l.text)).toEqual(['', '', 'partial line', 'and another']);
    // A ring whose bounds are smaller than 64 KiB never takes more than they allow.
    const tiny = numbered(1000, 7, { maxLines: 10, maxBytes: 100, maxLineBytes: 20 });
    expect(storage(tiny).arena.length).toBe(100 + 2 * 10);
    expect(seqs(tiny.read().lines)).toEqual(range(990, 1000));
  });

  it('evicts beyond the bounds only if the arena cannot hold them (maxBytes near the largest Buffer)', () => {
    const ring = new OutputRing({ maxBytes: 100_000, maxLineBytes: 100, headLines: 0 });
    // Stands in for buffer.constants.MAX_LENGTH, which no chunk exceeds: here, 4 chunks of 5 lines.
    storage(ring).arenaMax = 1000;
    const text = (k: number): string => `${String(k).padStart(4, '0')}${'-'.repeat(43)}`;
    for (let k = 0; k < 1000; k += 5) {
      ring.push('stdout', Buffer.from(range(k, k + 5).map((j) => `${text(j)}\n`).join('')));
    }
    const read = ring.read(ALL);
    expect(storage(ring).arena.length).toBe(1000);
    expect(read.lines.length).toBeGreaterThanOrEqual(15);
    expect(seqs(read.lines)).toEqual(range(1000 - read.lines.length, 1000));
    for (const line of read.lines) expect(line.text).toBe(text(line.seq));
    expect(ring.stats().retainedBytes).toBeLessThanOrEqual(1000);
  });
});
