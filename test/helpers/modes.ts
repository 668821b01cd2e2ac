/**
 * The containment modes every integration test runs in. The cgroup mode needs a writable cgroup
 * v2 tree; where there is none its tests skip with the reason, unless HEPH_REQUIRE_CGROUP=1 (set by
 * .ci/run on machines that have one), which turns the skip into a failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import { findOwnCgroupDir } from '../../supervisor/platform/cgroup.js';

export type Mode = 'cgroup' | 'process-group';

function probeCgroup(): string | null {
  const probe = findOwnCgroupDir();
  if (!probe.ok) return probe.reason;
  const dir = path.join(probe.parent, `heph-jobs-probe-${process.pid}`);
  try {
    fs.mkdirSync(dir);
    const hasKill = fs.existsSync(path.join(dir, 'cgroup.kill'));
    fs.rmdirSync(dir);
    return hasKill ? null : 'the kernel has no cgroup.kill';
  } catch (error) {
    return `cannot create a cgroup under ${probe.parent}: ${(error as Error).message}`;
  }
}

export const cgroupUnavailable = probeCgroup();

/** The cgroup v2 directory tests may make cgroups in (a test's own, moved in by hand), or why none. */
export function writableCgroupParent(): { parent: string } | { reason: string } {
  const own = findOwnCgroupDir();
  if (!own.ok) return { reason: own.reason };
  const dir = path.join(own.parent, `heph-test-probe-${process.pid}`);
  try {
    fs.mkdirSync(dir);
    fs.rmdirSync(dir);
    return { parent: own.parent };
  } catch (error) {
    return { reason: `cannot create a cgroup under ${own.parent}: ${(error as Error).message}` };
  }
}

if (cgroupUnavailable && process.env.HEPH_REQUIRE_CGROUP === '1') {
  throw new Error(`HEPH_REQUIRE_CGROUP=1 but cgroup containment is unavailable: ${cgroupUnavailable}`);
}
if (cgroupUnavailable) console.warn(`[heph-jobs tests] cgroup mode skipped: ${cgroupUnavailable}`);

export const MODES: Mode[] = cgroupUnavailable ? ['process-group'] : ['cgroup', 'process-group'];
export const ALL_MODES: Mode[] = ['cgroup', 'process-group'];

/** `describe.each` rows: mode, and whether it must be skipped. */
export function modeRows(): [Mode, boolean][] {
  return ALL_MODES.map((mode) => [mode, mode === 'cgroup' && cgroupUnavailable !== null]);
}
