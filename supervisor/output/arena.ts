/**
 * The circular byte arena that holds an output ring's line bytes (SPEC 5), allocated once and then
 * reused so that ingest allocates nothing in steady state.
 *
 * Bytes are stored at "virtual" positions (a byte counter that only grows); the arena offset of a
 * position is that modulo the arena's size. A piece that runs past the end of the arena continues
 * at its start. The arena starts at 64 KiB (or its bound, if smaller) and doubles as the stored
 * bytes need it, up to its bound, so a quiet job stays small. It knows nothing of lines: the
 * owner records where each line starts, and shifts those positions by what `grow` returns.
 */
/** The arena starts this small (or at its bound, if smaller) and doubles up to its bound. */
const MIN_ARENA_BYTES = 64 * 1024;
const EMPTY: Buffer = Buffer.alloc(0);

/** An ES2024 resizable ArrayBuffer (Node 20 has them; the project's TypeScript lib is ES2023). */
interface ResizableArrayBuffer extends ArrayBuffer {
  readonly resizable: boolean;
  readonly maxByteLength: number;
  resize(byteLength: number): void;
}
const ResizableArrayBuffer = ArrayBuffer as unknown as new (
  byteLength: number,
  options: { maxByteLength: number },
) => ResizableArrayBuffer;

export class ByteArena {
  private bytes: Buffer = EMPTY;
  /** The resizable ArrayBuffer under `bytes`; null: none could be had, so growing copies. */
  private resizable: ResizableArrayBuffer | null | undefined;
  /** Virtual position of the oldest stored byte. */
  private head = 0;
  /** Virtual position one past the newest stored byte: where `append` stores next. */
  private tail = 0;

  /** `max`: the most bytes the arena may ever hold. */
  constructor(readonly max: number) {}

  /** Bytes stored, from the oldest to the newest. */
  get used(): number {
    return this.tail - this.head;
  }

  /** Where the next `append` stores its first byte. */
  get end(): number {
    return this.tail;
  }

  /** True when `need` more bytes fit without growing. */
  fits(need: number): boolean {
    return this.tail - this.head + need <= this.bytes.length;
  }

  /** The bytes before virtual position `position` are no longer needed. */
  dropBefore(position: number): void {
    this.head = position;
  }

  /** Nothing stored any more: start again at the arena's start. */
  clear(): void {
    this.head = this.tail = 0;
  }

  /** Stores `src[start, end)` at `end` (the caller made room first with `grow`). */
  append(src: Buffer, start: number, end: number): void {
    const n = end - start;
    if (n === 0) return;
    const bytes = this.bytes;
    const p = this.tail % bytes.length;
    const first = Math.min(n, bytes.length - p);
    src.copy(bytes, p, start, start + first);
    if (first < n) src.copy(bytes, 0, start + first, end);
    this.tail += n;
  }

  /**
   * Where the `len` bytes stored at virtual position `position` lie, as [buffer, start]: in the
   * arena itself when they do not wrap around its end (nothing is made: a read renders thousands
   * of lines, and a Buffer view per line cost more than the rendering), else in a copy joining the
   * two parts (only for this read), from 0.
   */
  span(position: number, len: number): [bytes: Buffer, start: number] {
    if (len === 0) return [EMPTY, 0];
    const bytes = this.bytes;
    const p = position % bytes.length;
    if (p + len <= bytes.length) return [bytes, p];
    return [Buffer.concat([bytes.subarray(p), bytes.subarray(0, p + len - bytes.length)], len), 0];
  }

  /**
   * Grows the arena (doubling, up to `max`) so that `need` more bytes fit, keeping what is stored
   * as one circular run. Returns how far every stored position moved: the owner adds it to the
   * positions it recorded. `used + need` must not exceed `max`.
   *
   * The arena is a resizable ArrayBuffer reserved at `max`, so growing commits more of it in
   * place: nothing is copied to a new buffer, and no old one is left for the GC (a copy per
   * doubling would leave up to `max` of garbage per ring, which V8 collects late). Only when a
   * resizable buffer cannot be had does it copy.
   */
  grow(need: number): number {
    const used = this.tail - this.head;
    const old = this.bytes;
    let size = Math.max(MIN_ARENA_BYTES, old.length * 2);
    while (size < used + need) size *= 2;
    size = Math.min(size, this.max);

    // Where the oldest stored byte is in the old arena, and how many bytes run past its end.
    const headAt = old.length > 0 ? this.head % old.length : 0;
    const wrapped = Math.max(0, headAt + used - old.length);
    let bytes: Buffer;
    let newHeadAt: number;
    const buffer = this.resizable;
    if (buffer && size <= buffer.maxByteLength) {
      buffer.resize(size);
      bytes = Buffer.from(buffer, 0, size);
      // The bytes stay where they are; a wrapped piece at the end moves to the new end, so the
      // contents are again one circular run.
      newHeadAt = headAt;
      if (wrapped > 0) {
        newHeadAt = size - (old.length - headAt);
        bytes.copyWithin(newHeadAt, headAt, old.length);
      }
    } else {
      bytes = this.allocate(size);
      newHeadAt = 0;
      if (used > 0) {
        old.copy(bytes, 0, headAt, headAt + used - wrapped);
        if (wrapped > 0) old.copy(bytes, used - wrapped, 0, wrapped);
      }
    }
    const shift = newHeadAt - this.head;
    this.bytes = bytes;
    this.head = newHeadAt;
    this.tail = newHeadAt + used;
    return shift;
  }

  /** A new arena of `size` bytes: resizable up to `max` where the runtime allows it. */
  private allocate(size: number): Buffer {
    if (this.resizable === undefined) {
      try {
        const buffer = new ResizableArrayBuffer(size, { maxByteLength: this.max });
        if (buffer.resizable && buffer.byteLength === size) {
          this.resizable = buffer;
          return Buffer.from(buffer, 0, size);
        }
      } catch {
        // Address space for `max` not to be had (or no resizable buffers): a fixed arena.
      }
      this.resizable = null;
    }
    return Buffer.allocUnsafeSlow(size);
  }
}
