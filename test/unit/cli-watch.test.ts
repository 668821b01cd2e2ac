/** The watch table: columns, stats in whatever shape the runtime gives, and job output made safe for a terminal. */
import { describe, expect, it } from 'vitest';
import { COLOUR, colourWanted } from '../../src/cli/colour.js';
import { cleanLine, formatBytes, formatCpu, readStats, renderWatch, rowOf, type WatchRow } from '../../src/cli/watch.js';
import type { JobReport } from '../../src/index.js';
import { report } from '../helpers/job-report.js';

describe('watch rows', () => {
  it('reads the stats the runtime reports, and shows - where there are none', () => {
    expect(readStats(report({ stats: { procs: 3, memoryBytes: 112 * 1024 * 1024, cpuSeconds: 4.1, ports: [5173] } }))).toEqual({
      procs: 3,
      memoryBytes: 112 * 1024 * 1024,
      cpuMs: 4100,
      ports: [5173],
    });
    expect(readStats(report({ stats: { procs: 1, memoryBytes: null, cpuSeconds: null, ports: [] } }))).toEqual({ procs: 1, memoryBytes: null, cpuMs: null, ports: [] });
    expect(readStats(report({ stats: null }))).toEqual({ procs: null, memoryBytes: null, cpuMs: null, ports: null });
  });

  it('strips what would move the cursor or recolour the table out of job output', () => {
    expect(cleanLine('\x1b[32mgreen\x1b[0m done')).toBe('green done');
    expect(cleanLine('progress 10%\rprogress 100%')).toBe('progress 100%');
    expect(cleanLine('\x1b]0;title\x07tab\there\x07')).toBe('tab here');
  });

  it('formats memory and CPU time', () => {
    expect(formatBytes(null)).toBe('-');
    expect(formatBytes(512 * 1024)).toBe('512 KB');
    expect(formatBytes(5.5 * 1024 * 1024)).toBe('5.5 MB');
    expect(formatBytes(112 * 1024 * 1024)).toBe('112 MB');
    expect(formatCpu(4100)).toBe('4.1s');
    expect(formatCpu(null)).toBe('-');
  });

  it('renders a table within the width, last line and all', () => {
    const rows: WatchRow[] = [
      rowOf(
        report({
          stats: { procs: 3, memoryBytes: 112 * 1024 * 1024, cpuSeconds: 4.1, ports: [5173] },
          output: { lines: [{ seq: 1, stream: 'stdout', text: 'ready in 300 ms', cutBytes: 0 }] } as unknown as JobReport['output'],
        }),
      ),
      rowOf(report({ id: 1, state: 'exited', exitCode: 3, command: 'exit 3', elapsedMs: 1000, endedAt: 1000 })),
    ];
    const lines = renderWatch({ title: 'heph-jobs watch', rows, empty: 'none', footer: ['press any key'] }, 100);
    expect(lines[0]).toBe('heph-jobs watch');
    expect(lines[2]).toMatch(/^ID\s+STATE\s+ELAPSED\s+PROCS\s+MEM\s+CPU\s+PORTS\s+COMMAND\s+LAST LINE$/);
    expect(lines[3]).toMatch(/^ 0\s+running\s+1:02\s+3\s+112 MB\s+4\.1s\s+:5173\s+npm run dev\s+ready in 300 ms$/);
    expect(lines[4]).toMatch(/^ 1\s+exited 3\s+0:01\s+-\s+-\s+-\s+-\s+exit 3$/);
    expect(lines.at(-1)).toBe('press any key');
    for (const line of renderWatch({ title: 'x'.repeat(300), rows, empty: '', footer: [] }, 40)) expect([...line].length).toBeLessThanOrEqual(40);
    expect(renderWatch({ title: 't', rows: [], empty: 'no jobs yet', footer: [] }, 80)).toContain('no jobs yet');
  });

  it('fits a small terminal: rows that do not fit are counted', () => {
    const rows = Array.from({ length: 30 }, (_, id) => rowOf(report({ id })));
    const lines = renderWatch({ title: 't', rows, empty: '', footer: ['f'] }, 80, 12);
    expect(lines.length).toBeLessThanOrEqual(12);
    expect(lines).toContain(`… ${30 - (lines.length - 6)} more`);
  });

  it('on a terminal: states and stderr lines coloured exactly where they are, the selected row in reverse video', () => {
    const rows: WatchRow[] = [
      rowOf(report({ output: { lines: [{ seq: 0, stream: 'stderr', text: 'warning: slow', cutBytes: 0 }] } as unknown as JobReport['output'] })),
      rowOf(report({ id: 1, state: 'exited', exitCode: 3, command: 'exit 3', endedAt: 1000 })),
      rowOf(report({ id: 2, state: 'waiting', command: 'next' })),
    ];
    const view = { title: 't', rows, empty: '', footer: [] };
    const plain = renderWatch(view, 100);
    const coloured = renderWatch(view, 100, undefined, { palette: COLOUR, selectedId: 1 });
    const strip = (line: string) => line.replace(/\x1b\[[0-9;]*m/g, '');
    expect(coloured.map(strip).map((line) => line.trimEnd())).toEqual(plain);
    expect(coloured[3]).toMatch(/^ 0  \x1b\[32mrunning\x1b\[39m +1:02 +- +- +- +- +npm run dev +\x1b\[31m! warning: slow\x1b\[39m$/);
    expect(coloured[4]).toMatch(/^\x1b\[7m 1  \x1b\[31mexited 3\x1b\[39m .*\x1b\[27m$/);
    expect(coloured[5]).toMatch(/^ 2  \x1b\[33mwaiting\x1b\[39m /);
  });

  it('colour only on a terminal, and never with NO_COLOR set', () => {
    expect(colourWanted({ isTTY: true }, {})).toBe(true);
    expect(colourWanted({ isTTY: false }, {})).toBe(false);
    expect(colourWanted({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(colourWanted({ isTTY: true }, { NO_COLOR: '' })).toBe(true); // set but empty: colour (no-color.org)
    expect(colourWanted({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
  });

  it('a selected row below what fits is brought into view', () => {
    const rows = Array.from({ length: 30 }, (_, id) => rowOf(report({ id })));
    const lines = renderWatch({ title: 't', rows, empty: '', footer: ['f'] }, 80, 12, { palette: COLOUR, selectedId: 25 });
    expect(lines.length).toBeLessThanOrEqual(12);
    expect(lines.some((line) => line.startsWith('\x1b[7m25 '))).toBe(true);
  });
});
