/**
 * The supervisor's two quick looks at its own children, which every cleanup check asks: is any
 * child a zombie still (one waitid peek, WNOWAIT), and which children did it not spawn (orphans
 * of jobs, reparented to it as the subreaper; job leaders it spawned and has not reaped are left
 * out, so a straggler check reads /proc only for those). Run in a fixture process with no reaper,
 * so a zombie stays one; the oracle is /proc (state Z, ppid) and the JavaScript childrenOf scan,
 * which sees every child: the same pids, with and without the leader.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BOUNDED } from '../helpers/bounded.js';

const FIXTURE = path.resolve(__dirname, '../fixtures/children-report.mjs');

type View = { zombie: boolean; adopted: number[] | null; children: number[] };
type Report = { leader: number; orphan: number; before: View; running: View; exited: View };

describe('the addon’s view of our children', () => {
  const report = JSON.parse(execFileSync(process.execPath, [FIXTURE], { ...BOUNDED, encoding: 'utf8' })) as Report;

  it('sees no zombie while no child has exited, and one once the leader has', () => {
    expect(report.before.zombie).toBe(false);
    expect(report.running.zombie).toBe(false);
    expect(report.exited.zombie).toBe(true);
  });

  it('lists an orphan that came to us, and not the job leader it spawned (which the /proc scan does list)', () => {
    const { leader, orphan } = report;
    expect(report.before.adopted).toEqual([]);
    expect(report.running.adopted).toEqual([]);
    expect(report.exited.adopted).toEqual([orphan]);
    // Negative control: the scan every kernel has sees the leader (running, then a zombie) too.
    expect(report.running.children).toEqual([leader]);
    expect([...report.exited.children].sort((a, b) => a - b)).toEqual([leader, orphan].sort((a, b) => a - b));
  });
});
