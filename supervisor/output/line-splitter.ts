/**
 * Line assembly for the output ring (SPEC 5): the part of a line that straddles chunks, and the
 * "collapse at `\r`, then cut" rule for lines longer than the line limit.
 *
 * Splitting itself (`Buffer.indexOf` on `\n`) stays in the ring's `push` loop, which records lines
 * that lie whole inside a chunk as views of it. Everything here keeps memory bounded: a line in
 * progress holds at most `maxLineBytes` (one buffer per stream, allocated once, when first needed)
 * and only counts the rest, however long the line gets.
 */

const CR = 0x0d;
const EMPTY = Buffer.alloc(0);

/** Where the kept part of a line lies, and how many bytes beyond the limit were cut. */
export interface LineRange {
  start: number;
  len: number;
  cut: number;
}

/**
 * For a line `buf[start, end)` (newline and the `\r` of `\r\n` excluded) that is longer than
 * `maxLineBytes`: drops trailing `\r` bytes, keeps only what follows the last `\r` (a progress
 * bar that rewrote itself is not "cut"), then cuts at `maxLineBytes`. Writes the result to `out`.
 */
export function cutLongLine(buf: Buffer, start: number, end: number, maxLineBytes: number, out: LineRange): void {
  while (end > start && buf[end - 1] === CR) end--;
  if (end > start) {
    const r = buf.subarray(start, end).lastIndexOf(CR);
    if (r >= 0) start += r + 1;
  }
  const len = end - start;
  out.start = start;
  out.len = Math.min(len, maxLineBytes);
  out.cut = len - out.len;
}

/**
 * The line in progress on one stream.
 *
 * The raw line so far is X + held + (cut bytes) + `\r` x crs, where X is empty or ends in a `\r`
 * that text followed (so nothing before it can show), and when cut > 0 neither `held` nor the cut
 * bytes contain a `\r`. Rendering `held` therefore gives the visible line cut at `maxLineBytes`,
 * the same text and cut count as if the line had arrived in one chunk.
 */
export class PendingLine {
  /** Bytes have arrived since the last newline. */
  open = false;
  /** When the line started (a counter the owner assigns), to order partial lines. */
  order = 0;
  /** Bytes kept in `held`. */
  len = 0;
  /** Bytes of the line beyond what `held` keeps. */
  cut = 0;
  /** Trailing `\r` bytes not stored: dropped at the newline, a reset if text follows them. */
  private crs = 0;
  /** `maxLineBytes` long, allocated when first needed. */
  private held: Buffer | undefined;

  constructor(private readonly maxLineBytes: number) {}

  /** Appends `data[start, end)`, which holds no `\n`. */
  append(data: Buffer, start: number, end: number): void {
    this.open = true;
    const n = end - start;
    if (this.cut === 0 && this.crs === 0 && this.len + n <= this.maxLineBytes) {
      if (n > 0) {
        this.held ??= Buffer.allocUnsafeSlow(this.maxLineBytes);
        data.copy(this.held, this.len, start, end);
        this.len += n;
      }
      return;
    }
    this.appendSlow(data, start, end);
  }

  /** The bytes kept so far (a view, valid until the next append). */
  view(): Buffer {
    return this.held === undefined ? EMPTY : this.held.subarray(0, this.len);
  }

  /**
   * Ends the line: a fresh state for the next one. The caller takes `view()` and `cut` first (the
   * ring copies the bytes into its arena), so ending a line allocates nothing.
   */
  reset(): void {
    this.open = false;
    this.len = 0;
    this.cut = 0;
    this.crs = 0;
  }

  /** Frees the line buffer (the stream ended); a later append allocates it again. */
  release(): void {
    if (!this.open) this.held = undefined;
  }

  /** The line overflows the limit, is already cut, or ends in `\r`: keep the invariant above. */
  private appendSlow(data: Buffer, start: number, end: number): void {
    const max = this.maxLineBytes;
    let textEnd = end;
    while (textEnd > start && data[textEnd - 1] === CR) textEnd--;
    if (textEnd > start) {
      // Text follows any `\r` before it, so such a `\r` hides everything before it.
      const r = data.subarray(start, textEnd).lastIndexOf(CR);
      if (r >= 0 || this.crs > 0) {
        this.len = 0;
        this.cut = 0;
        if (r >= 0) start += r + 1;
      }
      this.crs = 0;
      const n = textEnd - start;
      if (this.cut > 0) {
        this.cut += n;
      } else {
        const held = (this.held ??= Buffer.allocUnsafeSlow(max));
        if (this.len + n > max && this.len > 0) {
          // Full: keep only what follows the last `\r` held, then cut.
          const c = held.lastIndexOf(CR, this.len - 1);
          if (c >= 0) {
            held.copyWithin(0, c + 1, this.len);
            this.len -= c + 1;
          }
        }
        const take = Math.min(n, max - this.len);
        data.copy(held, this.len, start, start + take);
        this.len += take;
        this.cut = n - take;
      }
    }
    this.crs += end - textEnd;
  }
}
