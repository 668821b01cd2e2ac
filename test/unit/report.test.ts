/**
 * The report text of every state, pinned (SPEC 3): header, output lines, the earlier-lines line,
 * the last line, the list form. Records are built directly; `now` is fixed.
 */
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../src/runtime/job-record.js';
import type { OutputLine, OutputSnapshot } from '../../src/protocol/messages.js';
import { buildListReport, buildReport, formatElapsed, headerLine, listReportText, listText, reportText } from '../../src/reports/report.js';

const T0 = 1_700_000_000_000;
const CONTEXT = { maxJobs: 8 };

function record(overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    id: 0,
    command: 'npm run dev',
    cwd: '/repo',
    state: 'running',
    pid: 4242,
    cgroup: null,
    exitCode: null,
    signal: null,
    startedAt: T0,
    endedAt: null,
    cleanedUp: false,
    reason: null,
    supervisorPid: 4000,
    containment: 'process-group',
    lease: null,
    wants: [],
    abort: null,
    ...overrides,
  };
}

function out(text: string, seq: number, extra: Partial<OutputLine> = {}): OutputLine {
  return { seq, stream: 'stdout', text, cutBytes: 0, ...extra };
}

function err(text: string, seq: number): OutputLine {
  return { seq, stream: 'stderr', text, cutBytes: 0 };
}

/** A tail read of `lines`, all in the ring (nothing earlier unless said). */
function snapshot(lines: OutputLine[], extra: Partial<OutputSnapshot> = {}): OutputSnapshot {
  const complete = lines.filter((line) => line.partial === undefined);
  const total = complete.length === 0 ? 0 : complete[complete.length - 1]!.seq + 1;
  return {
    lines,
    head: [],
    earlier: complete[0]?.seq ?? total,
    dropped: 0,
    next: total - 1,
    totalLines: total,
    truncatedLines: 0,
    limitedByBytes: false,
    ...extra,
  };
}

/** A tail read of `count` lines `line <seq>` ending at `total`, with `dropped` fallen off the ring. */
function numbered(total: number, count: number, dropped: number): OutputSnapshot {
  const lines = Array.from({ length: count }, (_, k) => out(`line ${total - count + k}`, total - count + k));
  return snapshot(lines, { earlier: total - count, dropped, totalLines: total, next: total - 1 });
}

describe('formatElapsed', () => {
  it('is m:ss under an hour and h:mm:ss past it', () => {
    expect(formatElapsed(0)).toBe('0:00');
    expect(formatElapsed(999)).toBe('0:00');
    expect(formatElapsed(2_000)).toBe('0:02');
    expect(formatElapsed(59_999)).toBe('0:59');
    expect(formatElapsed(61_000)).toBe('1:01');
    expect(formatElapsed(10 * 60_000)).toBe('10:00');
    expect(formatElapsed(3_599_000)).toBe('59:59');
    expect(formatElapsed(3_600_000)).toBe('1:00:00');
    expect(formatElapsed(3_661_000)).toBe('1:01:01');
    expect(formatElapsed((3 * 3600 + 4 * 60 + 5) * 1000)).toBe('3:04:05');
    expect(formatElapsed(100 * 3_600_000)).toBe('100:00:00');
  });

  it('never shows a negative or non-finite time', () => {
    expect(formatElapsed(-5_000)).toBe('0:00');
    expect(formatElapsed(Number.NaN)).toBe('0:00');
  });
});

describe('buildReport: the text of every state', () => {
  it('running: the SPEC 3 example, exactly', () => {
    const report = buildReport(
      record(),
      snapshot([out('vite v5.0.0 dev server running at:', 0), out('http://localhost:5173/', 1)]),
      CONTEXT,
      T0 + 2_500,
    );
    expect(report.text).toBe(
      [
        'job 0 running 0:02 npm run dev',
        '> vite v5.0.0 dev server running at:',
        '> http://localhost:5173/',
        'job_status {"id": 0} reads more; job_kill {"id": 0} stops it.',
      ].join('\n'),
    );
    expect(report).toMatchObject({ id: 0, state: 'running', exitCode: null, signal: null, elapsedMs: 2_500, header: 'job 0 running 0:02 npm run dev' });
  });

  it('running with no output yet, and "starting" shown as running', () => {
    const report = buildReport(record({ id: 3, state: 'starting', command: 'sleep 100' }), snapshot([]), CONTEXT, T0);
    expect(report.text).toBe(
      ['job 3 running 0:00 sleep 100', '(no output yet)', 'job_status {"id": 3} reads more; job_kill {"id": 3} stops it.'].join('\n'),
    );
    expect(report.state).toBe('running');
  });

  it('exited 0 and cleaned up', () => {
    const report = buildReport(
      record({ id: 1, command: 'make', state: 'exited', exitCode: 0, endedAt: T0 + 5_000, cleanedUp: true }),
      snapshot([out('done', 0)]),
      CONTEXT,
      T0 + 60_000,
    );
    expect(report.text).toBe(['job 1 exited 0 0:05 make', '> done', 'job 1 has ended; its output stays readable with job_status {"id": 1}.'].join('\n'));
    expect(report).toMatchObject({ state: 'exited', exitCode: 0, signal: null, elapsedMs: 5_000, cleanedUp: true });
  });

  it('exited 127 with the shell error marked as stderr', () => {
    const report = buildReport(
      record({ id: 2, command: 'nonexistent-command', state: 'exited', exitCode: 127, endedAt: T0 + 10, cleanedUp: true }),
      snapshot([err('/bin/sh: 1: nonexistent-command: not found', 0)]),
      CONTEXT,
    );
    expect(report.text).toBe(
      [
        'job 2 exited 127 0:00 nonexistent-command',
        '! /bin/sh: 1: nonexistent-command: not found',
        'job 2 has ended; its output stays readable with job_status {"id": 2}.',
      ].join('\n'),
    );
  });

  it('exited with nothing printed', () => {
    const report = buildReport(record({ command: 'exit 3', state: 'exited', exitCode: 3, endedAt: T0, cleanedUp: true }), snapshot([]), CONTEXT);
    expect(report.text).toBe(['job 0 exited 3 0:00 exit 3', '(no output)', 'job 0 has ended; its output stays readable with job_status {"id": 0}.'].join('\n'));
  });

  it('exited while processes it started are still being stopped', () => {
    const report = buildReport(record({ state: 'exited', exitCode: 0, endedAt: T0 + 1_000, cleanedUp: false }), null, CONTEXT);
    expect(report.text).toBe(
      [
        'job 0 exited 0 0:01 npm run dev',
        'job 0\'s shell has ended, but processes it started are still being stopped; job_status {"id": 0} shows when they are gone.',
      ].join('\n'),
    );
    expect(report.cleanedUp).toBe(false);
  });

  it('killed by SIGTERM', () => {
    const report = buildReport(
      record({ state: 'killed', signal: 'SIGTERM', endedAt: T0 + 75_000, cleanedUp: true }),
      snapshot([out('ready', 0), err('got TERM', 1)]),
      CONTEXT,
    );
    expect(report.text).toBe(
      [
        'job 0 killed SIGTERM 1:15 npm run dev',
        '> ready',
        '! got TERM',
        'job 0 has ended; its output stays readable with job_status {"id": 0}.',
      ].join('\n'),
    );
    expect(report).toMatchObject({ state: 'killed', signal: 'SIGTERM', exitCode: null });
  });

  it('killed by SIGKILL', () => {
    const report = buildReport(
      record({ id: 5, command: 'ignore-term', state: 'killed', signal: 'SIGKILL', endedAt: T0 + 3_725_000, cleanedUp: true }),
      snapshot([out('ready', 0)]),
      CONTEXT,
    );
    expect(report.text).toBe(['job 5 killed SIGKILL 1:02:05 ignore-term', '> ready', 'job 5 has ended; its output stays readable with job_status {"id": 5}.'].join('\n'));
  });

  it('failed: says why and what to do', () => {
    const report = buildReport(
      record({ command: 'pwd', state: 'failed', pid: null, endedAt: T0, cleanedUp: true, reason: 'the working directory /nonexistent/dir does not exist' }),
      null,
      CONTEXT,
    );
    expect(report.text).toBe(
      [
        'job 0 failed 0:00 pwd',
        'job 0 could not start: the working directory /nonexistent/dir does not exist. Fix the command or its working directory, then call background again.',
      ].join('\n'),
    );
    expect(report).toMatchObject({ state: 'failed', reason: 'the working directory /nonexistent/dir does not exist', output: null });
  });

  it('lost: says why, that its output is gone, and what to do', () => {
    const reason = 'its supervisor died (the supervisor exited with signal SIGKILL); what was left of the job has been stopped';
    const cleaned = buildReport(record({ state: 'lost', endedAt: T0 + 4_000, cleanedUp: true, reason }), null, CONTEXT);
    expect(cleaned.text).toBe(
      [
        'job 0 lost 0:04 npm run dev',
        `job 0 is lost: ${reason}. Its output is gone; call background again if the job is still needed.`,
      ].join('\n'),
    );
    const cleaning = buildReport(record({ state: 'lost', endedAt: T0 + 4_000, cleanedUp: false, reason }), null, CONTEXT);
    expect(cleaning.text.split('\n')[1]).toBe(
      `job 0 is lost: ${reason}. What is left of it is still being stopped. Its output is gone; call background again if the job is still needed.`,
    );
  });

  it('waiting for its locks: names them and how to give up', () => {
    const wants = [
      { resource: 'port:5173', kind: 'port', value: '5173', mode: 'exclusive' as const },
      { resource: 'path:/repo', kind: 'path', value: '/repo', mode: 'shared' as const },
    ];
    const report = buildReport(record({ id: 4, state: 'waiting', pid: null, wants }), null, CONTEXT, T0 + 9_000);
    expect(report.text).toBe(
      [
        'job 4 waiting 0:09 npm run dev',
        'job 4 has not started: it waits for its locks: port:5173, path:/repo (shared). job_status {"id": 4} shows when it runs; job_kill {"id": 4} gives up on it.',
      ].join('\n'),
    );
  });

  it('shows a multi-line command on one header line', () => {
    expect(headerLine(record({ command: 'echo a\necho b' }), T0)).toBe('job 0 running 0:00 echo a\\necho b');
  });
});

describe('buildReport: what the output says about itself', () => {
  it('5000 lines, default tail: the last 50, how many came before, that 3000 are gone and how to read the rest', () => {
    const report = buildReport(record(), numbered(5000, 50, 3000), CONTEXT);
    const lines = report.text.split('\n');
    expect(lines).toHaveLength(1 + 1 + 50 + 1);
    expect(lines[1]).toBe(
      '(4950 earlier lines: the first 3000 are gone, since only the newest lines are kept; the other 1950 can be shown with job_status {"id": 0, "lines": 2000})',
    );
    expect(lines[2]).toBe('> line 4950');
    expect(lines[51]).toBe('> line 4999');
  });

  it('5000 lines, 2000 asked: all that is kept, and the first 3000 are gone', () => {
    const report = buildReport(record(), numbered(5000, 2000, 3000), CONTEXT);
    const lines = report.text.split('\n');
    expect(lines).toHaveLength(1 + 1 + 2000 + 1);
    expect(lines[1]).toBe("(3000 earlier lines are gone: only the newest lines of a job's output are kept)");
    expect(lines[2]).toBe('> line 3000');
  });

  it('earlier lines all still kept: how many, and the exact call that shows them', () => {
    const report = buildReport(record({ id: 7 }), numbered(120, 50, 0), CONTEXT);
    expect(report.text.split('\n')[1]).toBe('(70 earlier lines not shown; job_status {"id": 7, "lines": 120} shows them)');
    const one = buildReport(record({ id: 7 }), numbered(51, 50, 0), CONTEXT);
    expect(one.text.split('\n')[1]).toBe('(1 earlier line not shown; job_status {"id": 7, "lines": 51} shows them)');
  });

  it('no earlier-lines line when everything is shown', () => {
    const report = buildReport(record(), numbered(10, 10, 0), CONTEXT);
    expect(report.text).not.toMatch(/earlier/);
  });

  it('a read cut by its byte bound says asking for more lines would not help', () => {
    const report = buildReport(record(), { ...numbered(5000, 7, 3000), limitedByBytes: true }, CONTEXT);
    expect(report.text.split('\n')[1]).toBe(
      '(4993 earlier lines not shown: the lines shown already fill what one read returns; the first 3000 of them are gone, since only the newest lines are kept)',
    );
  });

  it('a cut line says how many bytes were cut; a line clipped by the read says so too', () => {
    const cut = out('x'.repeat(20), 0, { cutBytes: 1_040_384 });
    const clipped = { ...out('y'.repeat(10), 1), clippedBytes: 300 };
    const report = buildReport(record(), snapshot([cut, clipped]), CONTEXT);
    const lines = report.text.split('\n');
    expect(lines[1]).toBe(`> ${'x'.repeat(20)} [line cut: 1040384 more bytes not kept]`);
    expect(lines[2]).toBe(`> ${'y'.repeat(10)} [300 more bytes not shown: this read reached its size limit]`);
    const single = buildReport(record(), snapshot([out('z', 0, { cutBytes: 1 })]), CONTEXT);
    expect(single.text.split('\n')[1]).toBe('> z [line cut: 1 more byte not kept]');
  });

  it('an unfinished last line is shown as it stands', () => {
    const report = buildReport(record(), snapshot([out('first', 0), out('Password: ', 1, { partial: true })], { totalLines: 1, next: 0 }), CONTEXT);
    expect(report.text.split('\n').slice(1, 3)).toEqual(['> first', '> Password: ']);
  });

  it('a cursor read says when lines fell off since the last read, or that nothing is new', () => {
    const gone = buildReport(record(), { ...numbered(5000, 10, 3000), dropped: 1200 }, { maxJobs: 8, since: 1799 });
    expect(gone.text.split('\n')[1]).toBe("(1200 lines since the last read are gone: only the newest lines of a job's output are kept)");
    const cut = buildReport(record(), { ...numbered(5000, 10, 3000), dropped: 0, limitedByBytes: true, next: 4999 - 10 }, { maxJobs: 8, since: 4979 });
    expect(cut.text.split('\n').at(-2)).toBe('(this read reached its size limit; job_status {"id": 0, "since": 4989} reads on)');
    const none = buildReport(record(), snapshot([], { totalLines: 10, earlier: 10, next: 9 }), { maxJobs: 8, since: 9 });
    expect(none.text.split('\n')[1]).toBe('(no new output since the last read)');
  });
});

describe('the list form', () => {
  it('one header line per job, oldest first, then N of maxJobs running', () => {
    const now = T0 + 65_000;
    const reports = [
      buildReport(record({ id: 0, state: 'exited', exitCode: 0, endedAt: T0 + 1_000, cleanedUp: true, command: 'npm test' }), null, CONTEXT, now),
      buildReport(record({ id: 1 }), null, CONTEXT, now),
      buildReport(record({ id: 2, state: 'killed', signal: 'SIGTERM', endedAt: T0 + 2_000, cleanedUp: true, command: 'tail -f log' }), null, CONTEXT, now),
      buildReport(record({ id: 3, state: 'starting', command: 'vite' }), null, CONTEXT, now),
    ];
    const list = buildListReport(reports, 8);
    expect(list.text).toBe(
      [
        'job 0 exited 0 0:01 npm test',
        'job 1 running 1:05 npm run dev',
        'job 2 killed SIGTERM 0:02 tail -f log',
        'job 3 running 1:05 vite',
        '2 of 8 running',
      ].join('\n'),
    );
    expect(list).toMatchObject({ running: 2, maxJobs: 8 });
    expect(list.jobs.map((job) => job.id)).toEqual([0, 1, 2, 3]);
    expect(listText(reports, 3).split('\n').at(-1)).toBe('2 of 3 running');
  });

  it('with no jobs yet', () => {
    expect(buildListReport([], 8).text).toBe(['no jobs yet; background {"command": "..."} starts one.', '0 of 8 running'].join('\n'));
  });
});

describe('the shell dialect: the same report, its hints written as the heph-jobs shell takes them', () => {
  const lastLine = (text: string) => text.split('\n').at(-1);

  it('each state\'s last line names the shell\'s commands (status 0, kill 0), never a tool call', () => {
    const wants = [{ resource: 'port:5173', kind: 'port', value: '5173', mode: 'exclusive' as const }];
    const cases: [JobRecord, string][] = [
      [record(), 'status 0 reads more; kill 0 stops it.'],
      [record({ id: 4, state: 'waiting', pid: null, wants }), 'job 4 has not started: it waits for its locks: port:5173. status 4 shows when it runs; kill 4 gives up on it.'],
      [record({ id: 1, state: 'exited', exitCode: 0, endedAt: T0 + 5, cleanedUp: true }), 'job 1 has ended; its output stays readable with status 1.'],
      [record({ id: 1, state: 'exited', exitCode: 0, endedAt: T0 + 5, cleanedUp: false }), "job 1's shell has ended, but processes it started are still being stopped; status 1 shows when they are gone."],
      [record({ state: 'failed', reason: 'no such directory', pid: null }), 'job 0 could not start: no such directory. Fix the command or its working directory, then run background again.'],
      [record({ state: 'lost', cleanedUp: true, reason: 'its supervisor died' }), 'job 0 is lost: its supervisor died. Its output is gone; run background again if the job is still needed.'],
    ];
    for (const [rec, line] of cases) {
      const report = buildReport(rec, null, CONTEXT, T0);
      expect(lastLine(reportText(report, 'shell'))).toBe(line);
      // Negative control: the model's text of the same report names the tools.
      expect(lastLine(report.text)).toMatch(/job_status \{"id": \d\}|call background again/);
    }
  });

  it('the hints inside the output section are the shell\'s flags', () => {
    const earlier = buildReport(record({ id: 7 }), numbered(120, 50, 0), CONTEXT);
    expect(reportText(earlier, 'shell').split('\n')[1]).toBe('(70 earlier lines not shown; status 7 --lines 120 shows them)');
    const some = buildReport(record(), numbered(5000, 50, 3000), CONTEXT);
    expect(reportText(some, 'shell').split('\n')[1]).toMatch(/the other 1950 can be shown with status 0 --lines 2000\)$/);
    const cut = buildReport(record(), { ...numbered(5000, 10, 3000), dropped: 0, limitedByBytes: true, next: 4989 }, { maxJobs: 8, since: 4979 });
    expect(reportText(cut, 'shell').split('\n').at(-2)).toBe('(this read reached its size limit; status 0 --since 4989 reads on)');
    expect(listReportText(buildListReport([], 8), 'shell')).toBe('no jobs yet; background CMD starts one.\n0 of 8 running');
  });

  it('the tool dialect is the report\'s own text, rebuilt from its fields alone (waits, timeouts and cursor reads included)', () => {
    const reports = [
      buildReport(record(), numbered(5000, 50, 3000), CONTEXT),
      buildReport(record(), { ...numbered(5000, 10, 3000), dropped: 1200 }, { maxJobs: 8, since: 1799 }),
      buildReport(record(), snapshot([out('ready', 0)]), { maxJobs: 8, waited: { kind: 'matched', waitedMs: 1200, line: 'ready', pattern: 'rea' } }),
      buildReport(record({ state: 'killed', signal: 'SIGTERM', endedAt: T0 + 90_000, cleanedUp: true, timedOut: true, input: { timeoutMs: 90_000 } as JobRecord['input'] }), null, CONTEXT),
    ];
    for (const report of reports) expect(reportText(report)).toBe(report.text);
    expect(reports[3]!.text).toContain('(stopped by its timeout of 1:30)');
    expect(reports[2]).toMatchObject({ waited: { kind: 'matched' }, since: null, timedOutAfterMs: null });
    expect(reports[1]).toMatchObject({ since: 1799, waited: null });
  });
});

describe('reads that do not repeat, and filtered reads (issue 13, items 2 and 3)', () => {
  const tool = (report: ReturnType<typeof buildReport>) => report.text.split('\n');
  const shell = (report: ReturnType<typeof buildReport>) => reportText(report, 'shell').split('\n');

  it('a cursor read always ends its output with the call that reads on, in both dialects', () => {
    const read = buildReport(record(), { ...numbered(100, 10, 0), earlier: 90 }, { maxJobs: 8, since: 89 });
    expect(tool(read).at(-2)).toBe('(job_status {"id": 0, "since": 99} reads on)');
    expect(shell(read).at(-2)).toBe('(status 0 --since 99 reads on)');
    const none = buildReport(record(), snapshot([], { totalLines: 10, earlier: 10, next: 9 }), { maxJobs: 8, since: 9 });
    expect(tool(none).slice(1, 3)).toEqual(['(no new output since the last read)', '(job_status {"id": 0, "since": 9} reads on)']);
    // Negative control: a tail read names no cursor.
    expect(buildReport(record(), numbered(100, 10, 0), CONTEXT).text).not.toContain('reads on');
  });

  it('a filtered read: what matched, the lines with their numbers, the call that shows all', () => {
    const lines = [err('src/a.ts(3,1): error TS2304', 149), out('warn: slow', 270)];
    const filtered = { ...snapshot(lines, { totalLines: 300, next: 299 }), matched: 7 };
    const report = buildReport(record(), filtered, { maxJobs: 8, filter: "error|warn'" });
    expect(report.filter).toBe("error|warn'");
    expect(tool(report).slice(1, 4)).toEqual([
      `(7 lines match /error|warn'/, numbered as since counts; the newest 2 shown; job_status {"id": 0, "filter": "error|warn'", "lines": 7} shows all)`,
      '! 149: src/a.ts(3,1): error TS2304',
      '> 270: warn: slow',
    ]);
    expect(shell(report)[1]).toMatch(/; status 0 --filter 'error\|warn'\\''' --lines 7 shows all\)$/);
    const nothing = buildReport(record(), { ...snapshot([], { totalLines: 5000 }), matched: 0, dropped: 2980 }, { maxJobs: 8, filter: 'x' });
    expect(tool(nothing)[1]).toBe('(no kept line matches /x/; 2980 earlier lines are no longer kept and were not searched)');
    const page = buildReport(record(), { ...snapshot(lines, { totalLines: 300, next: 270 }), matched: 7 }, { maxJobs: 8, since: 100, filter: 'e' });
    expect(tool(page)[1]).toBe('(7 lines match /e/, numbered as since counts; the first 2 shown)');
    expect(tool(page).at(-2)).toBe('(job_status {"id": 0, "since": 270, "filter": "e"} reads on)');
  });

  it('a read of new lines only: nothing new, or what it skipped (and what of that is gone)', () => {
    const newOnly = (output: OutputSnapshot, after: number) => {
      const report = { ...buildReport(record(), output, CONTEXT), unseenAfter: after };
      return reportText(report).split('\n').slice(1, -1);
    };
    expect(newOnly(snapshot([], { totalLines: 30, earlier: 30, next: 29 }), 29)).toEqual(['(nothing new: all 30 lines of its output were shown before)']);
    expect(newOnly(numbered(100, 50, 0), 29)[0]).toBe('(20 unseen lines skipped; job_status {"id": 0, "since": 29} reads them)');
    expect(newOnly(numbered(5000, 50, 3000), 2949)[0]).toBe(
      '(2000 unseen lines skipped, the first 50 gone since only the newest lines are kept; job_status {"id": 0, "since": 2949} reads the rest)',
    );
    expect(newOnly(numbered(5000, 50, 3000), 9)[0]).toBe(
      '(4940 unseen lines skipped, the first 2990 gone since only the newest lines are kept; job_status {"id": 0, "since": 9} reads the rest)',
    );
    expect(newOnly(numbered(5000, 50, 4950), 9)[0]).toBe('(4940 unseen lines skipped: they are gone, since only the newest lines are kept)');
    // Nothing skipped: just the lines.
    expect(newOnly(numbered(100, 50, 0), 49)).toEqual(Array.from({ length: 50 }, (_, k) => `> line ${50 + k}`));
  });
});
