/**
 * The filtered read of supervisor/output/filter.ts against real rings: which kept lines it finds
 * (head, ring, lines in progress), the newest N or a page after `since`, the count of all matches,
 * where the next page starts, the byte bound, and what was no longer kept to search.
 */
import { describe, expect, it } from 'vitest';
import { OutputRing, type OutputLimits } from '../../supervisor/output/index.js';
import { filterOutput } from '../../supervisor/output/filter.js';
import { compileLinePattern, type LinePattern } from '../../src/protocol/pattern.js';

function pattern(source: string, flags = ''): LinePattern {
  const compiled = compileLinePattern({ source, flags });
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.problem));
  return compiled.pattern;
}

/** Lines `line 0` ... `line n-1`; every tenth (`line 0`, `line 10`, ...) also says `error`. */
function build(n: number, limits: Partial<OutputLimits> = {}): OutputRing {
  const ring = new OutputRing(limits);
  let text = '';
  for (let k = 0; k < n; k++) text += k % 10 === 0 ? `line ${k} error\n` : `line ${k}\n`;
  ring.push('stdout', Buffer.from(text));
  return ring;
}

const seqs = (lines: readonly { seq: number }[]): number[] => lines.map((line) => line.seq);

describe('filterOutput', () => {
  it('the newest `tail` matches, oldest first, with the count of all; the rest of the read as a tail read', async () => {
    const ring = build(300);
    const read = await filterOutput(() => ring.source(), pattern('error'), { tail: 3 });
    expect(seqs(read.lines)).toEqual([270, 280, 290]);
    expect(read.lines[0]!.text).toBe('line 270 error');
    expect(read).toMatchObject({ matched: 30, head: [], dropped: 0, totalLines: 300, next: 299, limitedByBytes: false });
    // Default: 50 (all 30 here). Negative control: a pattern no line has.
    expect((await filterOutput(() => ring.source(), pattern('error'), {})).lines).toHaveLength(30);
    expect(await filterOutput(() => ring.source(), pattern('nowhere'), {})).toMatchObject({ lines: [], matched: 0 });
  });

  it('with since and limit: the first matches after since, and next where the following page starts', async () => {
    const ring = build(300);
    const page = await filterOutput(() => ring.source(), pattern('error'), { since: 100, limit: 2 });
    expect(seqs(page.lines)).toEqual([110, 120]);
    expect(page).toMatchObject({ matched: 19, next: 120 });
    const last = await filterOutput(() => ring.source(), pattern('error'), { since: 270, limit: 5 });
    expect(seqs(last.lines)).toEqual([280, 290]);
    // Every match shown: the next page starts after the last line, where only new matches come.
    expect(last).toMatchObject({ matched: 2, next: 299 });
    // A page of 0 reads on from where it began.
    expect(await filterOutput(() => ring.source(), pattern('error'), { since: 5, limit: 0 })).toMatchObject({ lines: [], matched: 29, next: 5 });
  });

  it('searches the head lines the ring no longer holds, and counts the lines it could not search', async () => {
    const ring = build(300, { maxLines: 100, headLines: 20 });
    const read = await filterOutput(() => ring.source(), pattern('error'), {});
    // Head: 0..19 (errors 0, 10); ring: 200..299 (errors 200..290); 20..199 are gone.
    expect(seqs(read.lines)).toEqual([0, 10, 200, 210, 220, 230, 240, 250, 260, 270, 280, 290]);
    expect(read).toMatchObject({ matched: 12, dropped: 180 });
    const after = await filterOutput(() => ring.source(), pattern('error'), { since: 150 });
    expect(after).toMatchObject({ matched: 10, dropped: 49 });
  });

  it('matches a line in progress, and each line with the flags it was given', async () => {
    const ring = new OutputRing();
    ring.push('stdout', Buffer.from('Ready\nwaiting for ERROR'));
    ring.push('stderr', Buffer.from('fatal: error\n'));
    const read = await filterOutput(() => ring.source(), pattern('error', 'i'), {});
    expect(read.lines.map((line) => [line.seq, line.stream, line.text, line.partial ?? false])).toEqual([
      [1, 'stderr', 'fatal: error', false],
      [2, 'stdout', 'waiting for ERROR', true],
    ]);
    expect((await filterOutput(() => ring.source(), pattern('error'), {})).matched).toBe(1);
  });

  it('keeps to maxBytes: the newest that fit, a lone line too long clipped', async () => {
    const ring = build(300);
    const read = await filterOutput(() => ring.source(), pattern('error'), { maxBytes: 40 });
    expect(seqs(read.lines)).toEqual([280, 290]);
    expect(read).toMatchObject({ matched: 30, limitedByBytes: true });
    const clipped = await filterOutput(() => ring.source(), pattern('error'), { maxBytes: 5 });
    expect(clipped.lines.map((line) => [line.seq, line.text, line.clippedBytes])).toEqual([[290, 'line ', 9]]);
    const page = await filterOutput(() => ring.source(), pattern('error'), { since: -1, limit: 10, maxBytes: 40 });
    // "line 0 error", "line 10 error", "line 20 error": 38 bytes; the next would pass 40.
    expect(seqs(page.lines)).toEqual([0, 10, 20]);
    expect(page).toMatchObject({ limitedByBytes: true, next: 20 });
  });

  it('lets other work run during a long scan, and counts lines that fell off meanwhile as not searched', async () => {
    // A ring of 100 000 lines, a pattern RE2 must run on each: the scan pauses (setImmediate) at
    // least once, and lines pushed during the pause evict the ones it had not reached.
    const ring = build(100_000, { maxLines: 100_000, maxBytes: 64 * 1024 * 1024 });
    let ran = 0;
    let pushed = false;
    const ticker = setInterval(() => {
      ran++;
      if (!pushed) {
        pushed = true;
        let text = '';
        for (let k = 0; k < 50_000; k++) text += 'later\n';
        ring.push('stdout', Buffer.from(text));
      }
    }, 0);
    try {
      const read = await filterOutput(() => ring.source(), pattern('line \\d+ error$'), { tail: 1_000_000 });
      expect(ran).toBeGreaterThan(0);
      // Lines that were never read: those the push evicted before the scan got there.
      expect(read.dropped).toBeGreaterThan(0);
      expect(read.matched + read.dropped / 10).toBeCloseTo(10_000, -1);
      expect(read.totalLines).toBe(100_000);
    } finally {
      clearInterval(ticker);
    }
  });
});
