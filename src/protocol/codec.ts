/**
 * The channel's framing: a 4-byte big-endian length, then one msgpack value. The msgpackr
 * options are pinned here, and both the runtime and the supervisor import this module, so the two
 * sides can never disagree on encoding.
 */
// The plain entry point: the main one also loads streams and the optional native extractor, which
// costs ~10 ms of the supervisor's start and would load child_process (see supervisor-client.ts).
import { Packr } from 'msgpackr/pack';

/** Largest frame either side accepts. Requests are small; the largest reply is one output read
 * (bounded by the read's byte budget, at most a few MiB). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
const HEADER_BYTES = 4;

// Plain maps and arrays only: no records/structures (both ends would have to share state), no
// bundled strings, Maps as objects.
const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true, bundleStrings: false });

export function encodeFrame(value: unknown): Buffer {
  const body = packr.pack(value);
  if (body.length > MAX_FRAME_BYTES) {
    throw new RangeError(`frame of ${body.length} bytes exceeds the limit of ${MAX_FRAME_BYTES} bytes`);
  }
  const frame = Buffer.allocUnsafe(HEADER_BYTES + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, HEADER_BYTES);
  return frame;
}

/** What the reader found in one frame. A bad frame does not stop the stream. */
export type DecodedFrame =
  | { ok: true; value: unknown }
  | { ok: false; reason: 'too-large' | 'undecodable'; message: string };

/**
 * Splits a byte stream into frames. An oversized frame is skipped (its bytes are discarded as
 * they arrive, never buffered) and reported once, so one bad frame cannot take the channel down.
 */
export class FrameReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private skipBytes = 0;

  constructor(private readonly maxFrameBytes = MAX_FRAME_BYTES) {}

  push(chunk: Buffer, emit: (frame: DecodedFrame) => void): void {
    if (this.skipBytes > 0) {
      const skipped = Math.min(this.skipBytes, chunk.length);
      this.skipBytes -= skipped;
      chunk = chunk.subarray(skipped);
    }
    if (chunk.length === 0) return;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    while (this.pendingBytes >= HEADER_BYTES) {
      const buffer = this.flatten();
      const length = buffer.readUInt32BE(0);
      if (length > this.maxFrameBytes) {
        const available = buffer.length - HEADER_BYTES;
        this.skipBytes = Math.max(0, length - available);
        this.consume(HEADER_BYTES + Math.min(length, available));
        emit({ ok: false, reason: 'too-large', message: `frame of ${length} bytes exceeds the limit of ${this.maxFrameBytes} bytes` });
        continue;
      }
      if (buffer.length < HEADER_BYTES + length) return;
      const body = buffer.subarray(HEADER_BYTES, HEADER_BYTES + length);
      this.consume(HEADER_BYTES + length);
      let decoded: DecodedFrame;
      try {
        decoded = { ok: true, value: packr.unpack(body) };
      } catch (error) {
        decoded = { ok: false, reason: 'undecodable', message: `frame does not decode as msgpack: ${(error as Error).message}` };
      }
      emit(decoded);
    }
  }

  private flatten(): Buffer {
    if (this.pending.length > 1) this.pending = [Buffer.concat(this.pending, this.pendingBytes)];
    return this.pending[0] ?? Buffer.alloc(0);
  }

  private consume(bytes: number): void {
    const buffer = this.flatten();
    const rest = buffer.subarray(bytes);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
  }
}
