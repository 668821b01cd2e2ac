import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameReader, type DecodedFrame } from '../../src/protocol/codec.js';

function collect(reader: FrameReader, chunks: Buffer[]): DecodedFrame[] {
  const frames: DecodedFrame[] = [];
  for (const chunk of chunks) reader.push(chunk, (frame) => frames.push(frame));
  return frames;
}

describe('frame codec', () => {
  it('round-trips values split at every byte boundary', () => {
    const values = [{ id: 1, type: 'ping' }, { id: 2, ok: true, value: { text: 'héllo', n: [1, 2, 3] } }, null, 'x'.repeat(70_000)];
    const stream = Buffer.concat(values.map((value) => encodeFrame(value)));
    for (const step of [1, 3, 7, 1000, stream.length]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < stream.length; i += step) chunks.push(stream.subarray(i, i + step));
      const frames = collect(new FrameReader(), chunks);
      expect(frames).toEqual(values.map((value) => ({ ok: true, value })));
    }
  });

  it('reports an oversized frame without buffering it, then reads on', () => {
    const reader = new FrameReader(1024);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(5000);
    const frames = collect(reader, [header, Buffer.alloc(3000), Buffer.alloc(2000), encodeFrame({ id: 9 })]);
    expect(frames).toHaveLength(2);
    expect(frames[0]).toMatchObject({ ok: false, reason: 'too-large' });
    expect(frames[1]).toEqual({ ok: true, value: { id: 9 } });
  });

  it('reports a frame that does not decode, then reads on', () => {
    const garbage = Buffer.from([0xc1, 0xc1, 0xc1]); // 0xc1 is never used in msgpack
    const header = Buffer.alloc(4);
    header.writeUInt32BE(garbage.length);
    const frames = collect(new FrameReader(), [header, garbage, encodeFrame({ id: 3 })]);
    expect(frames[0]).toMatchObject({ ok: false, reason: 'undecodable' });
    expect(frames[1]).toEqual({ ok: true, value: { id: 3 } });
  });

  it('refuses to encode a frame over the limit', () => {
    expect(() => encodeFrame(Buffer.alloc(17 * 1024 * 1024))).toThrow(/exceeds the limit/);
  });
});
