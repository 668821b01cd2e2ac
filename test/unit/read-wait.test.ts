/**
 * The supervisor's wait on a pattern (supervisor/requests/read-wait.ts), against a job made of
 * plain data: even under RE2 one line's test costs time that grows with the pattern and the line,
 * so a long backlog of lines must be scanned in slices with the event loop running between them
 * (other requests, other jobs' output, a kill), and the wait must end at its deadline.
 */
import { describe, expect, it } from 'vitest';
import type { OutputLine, OutputRead } from '../../src/protocol/output.js';
import { compileLinePattern } from '../../src/protocol/pattern.js';
import { waitOnOutput, type WaitableJob } from '../../supervisor/requests/read-wait.js';

/** A pattern at the instruction bound (200) built so that RE2's DFA gives up on lines of random
 * a's and b's: each 8 KiB line then costs tens to hundreds of ms (it never matches: "!" ends them). */
const UNTIL = { source: 'a[ab]{196}$', flags: '' };

/** Lines printed before the wait, and what the wait must end within (its 2 s and a generous margin). */
const BACKLOG = 500;
const BOUND_MS = 8_000;

/** 8 KiB lines of a's and b's (seeded), each ending in "!". */
function randomLines(count: number): string[] {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  return Array.from({ length: count }, () => `${Array.from({ length: 8191 }, () => (next() < 0.5 ? 'a' : 'b')).join('')}!`);
}

/** A job that has printed `lines` and keeps running. */
function backlog(lines: string[]): WaitableJob {
  const all: OutputLine[] = lines.map((text, seq) => ({ seq, stream: 'stdout', text, cutBytes: 0 }));
  return {
    id: 0,
    ended: false,
    drained: false,
    lineCount: all.length,
    readLines(since: number): OutputRead {
      const lines = all.filter((line) => line.seq > since);
      return { lines, head: [], earlier: since + 1, dropped: 0, next: lines.at(-1)?.seq ?? since, totalLines: all.length, truncatedLines: 0, limitedByBytes: false };
    },
    onChange: () => () => undefined,
    portCheck: () => () => false,
  };
}

describe('a wait on a pattern over a long backlog', () => {
  it('lets the event loop run while it scans, and ends at its deadline', async () => {
    // Scanning the whole backlog in one go would hold the event loop far longer (the control below).
    const job = backlog(randomLines(BACKLOG));
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    const started = Date.now();
    try {
      const result = await waitOnOutput(job, { ms: 2_000, until: UNTIL, from: -1 }, 0);
      const took = Date.now() - started;
      console.log(`the wait answered after ${took} ms; a 20 ms timer fired ${ticks} times meanwhile`);
      expect(result.kind).toBe('timed-out');
      expect(took).toBeLessThan(BOUND_MS);
      // Timers ran while it scanned (each yield lets the loop go round, timers, I/O and all).
      expect(ticks).toBeGreaterThan(0);
    } finally {
      clearInterval(ticker);
    }
  });

  it('negative control: the whole backlog, tested in one go, would take far longer than that bound', () => {
    const compiled = compileLinePattern(UNTIL);
    if (!compiled.ok) throw new Error('the pattern compiles');
    const sample = randomLines(5);
    const started = Date.now();
    for (const line of sample) expect(compiled.pattern.test(line)).toBe(false);
    const perLine = (Date.now() - started) / sample.length;
    console.log(`${perLine} ms a line: ${Math.round((BACKLOG * perLine) / 1000)} s for the backlog in one go`);
    expect(BACKLOG * perLine).toBeGreaterThan(BOUND_MS);
  });
});
