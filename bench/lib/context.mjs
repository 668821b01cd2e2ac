/** What every figure gets: the run length (quick or full), progress output, and shared paths. */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const BENCH_DIR = path.resolve(here, '..');
export const TREE = path.join(BENCH_DIR, 'fixtures', 'tree.sh');

export function makeContext({ quick }) {
  return {
    quick,
    /** Rounds for this figure: the full number, or the quick one. */
    runs: (full, short) => (quick ? short : full),
    progress(figure) {
      let last = 0;
      return (done, total) => {
        const t = Date.now();
        if (done === total || t - last > 2000) {
          last = t;
          process.stderr.write(`  [${figure}] ${done}/${total}\n`);
        }
      };
    },
    log: (text) => process.stderr.write(`  ${text}\n`),
  };
}

/**
 * A marker no other process carries: `HEPH_BENCH=<bench pid>-<kind>-<n>`, put in the environment
 * of one measured tree. Every marker of this run starts with MARKER_PREFIX, so an interrupted run
 * can still find and stop all it started.
 */
export const MARKER_PREFIX = `HEPH_BENCH=${process.pid}-`;
let markerSeq = 0;
export function freshMarker(kind) {
  return `${MARKER_PREFIX}${kind}-${markerSeq++}`;
}
