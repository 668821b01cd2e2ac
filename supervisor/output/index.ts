/**
 * The per-job output ring (SPEC 5): the ring and its ingest in `ring.ts` (bytes in `arena.ts`,
 * per-line metadata in `line-index.ts`, lines in progress in `line-splitter.ts`), reads in
 * `read.ts` (filtered reads in `filter.ts`), read-time rendering in `render.ts`, limits in `limits.ts`.
 */
export { OutputRing } from './ring.js';
export type { OutputStats } from './ring.js';
export { DEFAULT_OUTPUT_LIMITS } from './limits.js';
export type { OutputLimits } from './limits.js';
export type { ReadOptions } from './read.js';
export type { OutputLine, OutputRead, StreamName } from '../../src/protocol/output.js';
export { clipUtf8, renderLine, visibleRange } from './render.js';
export type { RenderOptions } from './render.js';
