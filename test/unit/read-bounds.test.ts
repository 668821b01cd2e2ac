/**
 * The derivation of the largest `maxBytes` a status may ask for (src/runtime/options.ts): the
 * worst reply it allows, every field at its widest, still encodes within one frame, for the default
 * limits and for the largest ring the options accept. The negative control drops the per-line
 * margin from the same derivation: the worst reply then no longer fits, so the margin is what
 * keeps the supervisor's encoder from throwing.
 */
import { describe, expect, it } from 'vitest';
import { encodeFrame, MAX_FRAME_BYTES } from '../../src/protocol/codec.js';
import type { OutputLine, ReadReply } from '../../src/protocol/messages.js';
import {
  MAX_LINE_BYTES,
  MAX_OUTPUT_LINES,
  maxReadBytes,
  normalizeOptions,
  OUTPUT_HEAD_LINES,
  READ_LINE_OVERHEAD_BYTES,
  READ_REPLY_OVERHEAD_BYTES,
} from '../../src/runtime/options.js';

/** A line with every field but its text at its widest. */
function widestLine(text: string): OutputLine {
  const big = Number.MAX_SAFE_INTEGER;
  return { seq: big, stream: 'stdout', text, cutBytes: big, partial: true, clippedBytes: big };
}

/** The largest read reply a runtime with these limits lets the supervisor build. */
function worstReply(outputLines: number, lineBytes: number, textBudget: number): { id: number; ok: true; value: ReadReply } {
  // Every line the ring, the partial lines and the head can hold; the budget's text in the first.
  const lines = Array.from({ length: outputLines + 2 }, (_, i) => widestLine(i === 0 ? 'x'.repeat(textBudget) : ''));
  const head = Array.from({ length: OUTPUT_HEAD_LINES }, () => widestLine(''));
  const ports = Array.from({ length: 65_536 }, (_, port) => port);
  const big = Number.MAX_SAFE_INTEGER;
  return {
    id: big,
    ok: true,
    value: {
      output: { lines, head, earlier: big, dropped: big, next: big, totalLines: big, truncatedLines: big, limitedByBytes: true },
      facts: {
        job: big,
        pid: big,
        cgroup: `/sys/fs/cgroup/${'c'.repeat(4000)}`,
        exit: { code: 255, signal: 'SIGTERM', at: big },
        cleanedUp: false,
        procs: big,
        stdinOpen: true,
        stats: { procs: big, memoryBytes: big, cpuSeconds: 1.5, ports },
      },
      // The matching line is rendered (4 bytes a raw byte at most) and outside the text budget.
      waited: { kind: 'matched', waitedMs: big, line: 'x'.repeat(4 * lineBytes) },
    },
  };
}

describe('the largest maxBytes a status accepts', () => {
  it('one line costs at most READ_LINE_OVERHEAD_BYTES beside its text', () => {
    const text = 'x'.repeat(70_000); // a text long enough for the widest string header
    expect(encodeFrame(widestLine(text)).length - 4 - text.length).toBeLessThanOrEqual(READ_LINE_OVERHEAD_BYTES);
  });

  it('leaves room for the worst reply, with the default limits and with the largest ring', () => {
    for (const [outputLines, lineBytes] of [
      [2000, 8192],
      [MAX_OUTPUT_LINES, MAX_LINE_BYTES],
    ] as const) {
      const budget = normalizeOptions({ outputLines, lineBytes }).maxReadBytes;
      expect(budget).toBe(maxReadBytes(outputLines, lineBytes));
      expect(budget).toBeGreaterThan(1024 * 1024);
      const frame = encodeFrame(worstReply(outputLines, lineBytes, budget));
      console.log(`outputLines ${outputLines}, lineBytes ${lineBytes}: maxBytes up to ${budget}, worst reply ${frame.length} bytes of ${MAX_FRAME_BYTES}`);
      expect(frame.length).toBeLessThanOrEqual(MAX_FRAME_BYTES);
    }
  });

  it('negative control: without the per-line margin the worst reply does not fit', () => {
    const outputLines = MAX_OUTPUT_LINES;
    const lineBytes = MAX_LINE_BYTES;
    const withoutLineMargin = MAX_FRAME_BYTES - READ_REPLY_OVERHEAD_BYTES - 4 * lineBytes;
    expect(() => encodeFrame(worstReply(outputLines, lineBytes, withoutLineMargin))).toThrow(/exceeds the limit of 16777216 bytes/);
  });

  it('refuses a ring the frame could not carry in one read', () => {
    expect(() => normalizeOptions({ outputLines: MAX_OUTPUT_LINES + 1 })).toThrow(/option outputLines must be an integer from 1 to 100000/);
    expect(() => normalizeOptions({ lineBytes: MAX_LINE_BYTES + 1 })).toThrow(/option lineBytes must be an integer from 16 to 1048576/);
  });
});
