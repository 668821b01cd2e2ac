/** The per-job output ring (SPEC 5): ingest in `ring.ts`, read-time rendering in `render.ts`. */
export { DEFAULT_OUTPUT_LIMITS, OutputRing } from './ring.js';
export type { OutputLimits, OutputLine, OutputRead, OutputStats, ReadOptions, StreamName } from './ring.js';
export { clipUtf8, renderLine, visibleRange } from './render.js';
export type { RenderOptions } from './render.js';
