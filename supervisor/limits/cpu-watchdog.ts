/**
 * A CPU limit where no cpu controller is in reach but the job has a v2 cgroup of its own: its CPU
 * time (cpu.stat, kept by every v2 cgroup) held to its share of wall time by freezing the cgroup
 * (cgroup.freeze) for as long as it ran ahead. A frozen task sees no signal, unlike SIGSTOP's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readCgroupFile } from '../platform/cgroup.js';

/** Ahead-of-share time a look may leave unfrozen: below this, a freeze costs more than it holds. */
const MIN_FREEZE_MS = 2;

function usageMs(cgroup: string): number | null {
  const match = /^usage_usec (\d+)$/m.exec(readCgroupFile(cgroup, 'cpu.stat') ?? '');
  return match ? Number(match[1]) / 1000 : null;
}

export class CpuWatchdog {
  /** Time the job was kept frozen, in ms. */
  throttledMs = 0;
  private budgetMs: number;
  private lastAt = Date.now();
  private thaw: NodeJS.Timeout | null = null;

  /** `share`: cores (0.5: half of one); `creditMs`: the most unused share a job may bank (one look's worth). */
  constructor(
    private readonly cgroup: string,
    private readonly share: number,
    private readonly creditMs: number,
  ) {
    this.budgetMs = usageMs(cgroup) ?? 0;
  }

  /** One look: the job frozen when its CPU time is ahead of its share of the time since it started. */
  look(): void {
    if (this.thaw !== null) return;
    const used = usageMs(this.cgroup);
    if (used === null) return;
    const now = Date.now();
    this.budgetMs = Math.min(this.budgetMs + this.share * (now - this.lastAt), used + this.share * this.creditMs);
    this.lastAt = now;
    const freezeMs = (used - this.budgetMs) / this.share;
    if (freezeMs < MIN_FREEZE_MS || !this.freeze(true)) return;
    this.throttledMs += freezeMs;
    this.thaw = setTimeout(() => {
      this.thaw = null;
      this.freeze(false);
    }, freezeMs);
  }

  /** Thaws the job for good (its processes are gone, or about to be killed: a frozen task dies too). */
  stop(): void {
    if (this.thaw === null) return;
    clearTimeout(this.thaw);
    this.thaw = null;
    this.freeze(false);
  }

  private freeze(on: boolean): boolean {
    try {
      fs.writeFileSync(path.join(this.cgroup, 'cgroup.freeze'), on ? '1' : '0');
      return true;
    } catch {
      return false; // the cgroup is gone: the job ended
    }
  }
}
