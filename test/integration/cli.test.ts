/**
 * The `heph-jobs` binary as a person uses it: driven through its stdin (a script, or line by line
 * through a pipe) and through a pseudo-terminal for what only a terminal has (approval questions,
 * Ctrl-C, tab completion, Ctrl-D, the live watch table). Every job command starts with an EofOracle
 * prefix, so "every job ended" is checked against kernel truth: the FIFO's write end, inherited by
 * every process of every job, reaching EOF. Nothing waits on a sleep: each step waits for output.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import { EofOracle, isReaped, see, waitUntil } from '../helpers/kernel.js';
import { modeRows } from '../helpers/modes.js';
import { FIXTURES } from '../helpers/runtime.js';

/** The facts a report's text states: header fields and output lines. */
interface TextFacts {
  id: number;
  state: string;
  exitCode: number | null;
  signal: string | null;
  command: string;
  lines: string[];
}

/** A header: `job <id> <state> <elapsed> <command>`, and for a running job ` · 2 procs · 3.4 MB · cpu 0.1s`. */
const HEADER = /^job (\d+) (running|waiting|failed|lost|exited (\S+)|killed (\S+)) \d+:\d\d(?::\d\d)? (.*?)(?: · \d+ procs?(?: · .*)?)?$/;

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The header line of job `id` in `state` running `command` (stats, if any, after it). */
function header(id: number, state: string, command: string): RegExp {
  return new RegExp(`^job ${id} ${state} \\d+:\\d\\d ${escape(command)}(?: · \\d+ procs?(?: · .*)?)?$`);
}

function factsOf(text: string): TextFacts {
  const [header = '', ...rest] = text.split('\n');
  const match = HEADER.exec(header);
  if (!match) throw new Error(`not a report: ${text}`);
  return {
    id: Number(match[1]),
    state: match[2]!.split(' ')[0]!,
    exitCode: match[3] === undefined ? null : Number(match[3]),
    signal: match[4] ?? null,
    command: match[5]!,
    lines: rest.filter((line) => line.startsWith('> ') || line.startsWith('! ')),
  };
}

/** Elapsed times and the stats of running jobs differ between two runs; nothing else should. */
function withoutElapsed(text: string): string {
  return text.replace(/ · \d+ procs?.*$/gm, '').replace(/ \d+:\d\d(?::\d\d)? /g, ' E ');
}

describe.each(modeRows())('heph-jobs shell (%s)', (mode, skip) => {
  it.skipIf(skip)('through a pipe: a job that ended since the last answer is told after the next answer, once, in the shell\'s words', async () => {
    const oracle = new EofOracle();
    const go = path.join(oracle.dir, 'go');
    execFileSync('mkfifo', [go]);
    try {
      const cli = startCli(['--yes', '--containment', mode]);
      const command = `${oracle.prefix}read x < ${go}; echo "got $x"`;
      cli.write(`background ${command}\n`);
      await cli.next(/stops it\.\n/);
      // The job waits in open(2) for a writer; this write ends it, with no answer in between.
      fs.writeFileSync(go, 'go\n');
      await oracle.waitEof();
      cli.write('logs -f 0\n'); // not an answer: it returns once the job has ended
      await cli.next(/job 0 exited 0 \d:\d\d .*\n/);
      cli.write('status 7\n');
      expect(await cli.next(/\n\(job 0 exited 0 .*\)\n/)).toMatch(/^job_status: .*\n\(job 0 exited 0 \d:\d\d .*echo "got \$x": 1 new line; status 0 reads it\)\n$/);
      cli.write('status 7\n');
      expect(await cli.next(/\n/)).toMatch(/^job_status: /);
      cli.write('status 0\n');
      expect(await cli.next(/with status 0\.\n/)).toMatch(/^job 0 exited 0 .*\n> got go\n/);
      cli.endInput();
      expect(await cli.exited).toEqual({ code: 0, signal: null });
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('through a pipe: start a job, read it, kill it; the end of the input ends the session and every job', async () => {
    // One oracle per job: an oracle is spent once its FIFO has reached EOF.
    const killed = new EofOracle();
    const left = new EofOracle();
    try {
      const cli = startCli(['--yes', '--containment', mode]);
      const first = `${killed.prefix}echo hello; exec sleep 60`;
      cli.write(`background ${first}\n`);
      expect((await cli.next(/stops it\.\n/)).split('\n')).toEqual([
        expect.stringMatching(header(0, 'running', first)),
        '> hello',
        'status 0 reads more; kill 0 stops it.',
        '',
      ]);
      cli.write('status 0 --lines 1\n');
      expect(await cli.next(/stops it\.\n/)).toMatch(/^job 0 running \d:\d\d .*\n> hello\n/);
      expect(killed.closed).toBe(false); // negative control: the running job holds the FIFO
      cli.write('kill 0\n');
      expect((await cli.next(/with status 0\.\n/)).split('\n')).toEqual([
        expect.stringMatching(header(0, 'killed SIGTERM', first)),
        '> hello',
        'job 0 has ended; its output stays readable with status 0.',
        '',
      ]);
      await killed.waitEof();
      // A job that leaves a detached grandchild behind: the session's end must stop that too.
      const second = `${left.prefix}(setsid sleep 60 &); echo second; exec sleep 60`;
      cli.write(`background ${second}\nstatus\n`);
      expect((await cli.next(/1 of 8 running\n/)).split('\n')).toEqual([
        expect.stringMatching(header(1, 'running', second)),
        '> second',
        'status 1 reads more; kill 1 stops it.',
        expect.stringMatching(header(0, 'killed SIGTERM', first)),
        expect.stringMatching(header(1, 'running', second)),
        '1 of 8 running',
        '',
      ]);
      expect(left.closed).toBe(false); // negative control: job 1 and its grandchild hold the FIFO
      cli.endInput();
      expect(await cli.next('session ended: stopped 1 job\n')).toBe('session ended: stopped 1 job\n');
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      await left.waitEof();
      expect(cli.err).toBe('');
    } finally {
      killed.dispose();
      left.dispose();
    }
  });

  it.skipIf(skip)('SIGTERM, or the terminal going away (SIGHUP), ends the session and every job', async () => {
    const term = new EofOracle();
    const hup = new EofOracle();
    try {
      const piped = startCli(['--yes', '--containment', mode]);
      piped.write(`background ${term.prefix}exec sleep 60\n`);
      await piped.next(/stops it\.\n/);
      expect(term.closed).toBe(false);
      process.kill(await piped.pid, 'SIGTERM');
      expect(await piped.exited).toEqual({ code: 143, signal: null });
      expect(piped.pending).toBe('\nsession ended by a signal: stopped 1 job\n');
      await term.waitEof();

      // On a terminal: the relay holding the terminal dies, the shell gets SIGHUP.
      const onTty = startCli(['--yes', '--containment', mode], { pty: true });
      await onTty.next('heph-jobs> ');
      onTty.write(`background ${hup.prefix}exec sleep 60\r`);
      await onTty.next(/stops it\.\n/);
      const shell = see(await onTty.pid);
      expect(hup.closed).toBe(false);
      process.kill(onTty.child.pid!, 'SIGKILL');
      await hup.waitEof();
      await waitUntil(() => isReaped(shell), 'the shell to exit');
    } finally {
      term.dispose();
      hup.dispose();
    }
  });

  it.skipIf(skip)('a script on stdin: eight jobs run, the ninth is refused and nothing more starts; the end stops all eight', async () => {
    const oracle = new EofOracle();
    try {
      const cli = startCli(['--yes', '--containment', mode]);
      const script = Array.from({ length: 8 }, (_, i) => `background ${oracle.prefix}exec sleep 60 # ${i}`);
      cli.write(`${script.join('\n')}\nbackground echo ninth\nstatus\n`);
      cli.endInput();
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      const out = cli.out;
      for (let i = 0; i < 8; i++) expect(out.split('\n')).toContainEqual(expect.stringMatching(header(i, 'running', `${oracle.prefix}exec sleep 60 # ${i}`)));
      expect(out).toMatch(/^background is refused: 8 of 8 jobs are running, the most allowed at once: .*Nothing was started\.$/m);
      expect(out).not.toMatch(/^job 8 /m);
      expect(out).toMatch(/\n8 of 8 running\nsession ended: stopped 8 jobs\n$/);
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('without a terminal and without --yes, level-2 commands are refused with how to allow them; reads still run', async () => {
    const cli = startCli(['--containment', mode]);
    cli.write('background echo hi\nstatus\nbogus\nstatus x\n');
    cli.endInput();
    expect(await cli.exited).toEqual({ code: 1, signal: null });
    expect(cli.out.split('\n')).toEqual([
      'background is refused: asking the user to approve background(echo hi) failed (stdin is not a terminal, so there is nobody to ask; ' +
        'run heph-jobs --yes to approve every action of a script), so nothing was started.',
      'no jobs yet; background CMD starts one.',
      '0 of 8 running',
      'session ended: stopped 0 jobs',
      '',
    ]);
    // The lines that are not commands are said on stderr, and make the exit status 1.
    expect(cli.err.split('\n')).toEqual([
      expect.stringMatching(/^unknown command "bogus"; the commands are background, job_status, job_kill, .* \(help explains them\)$/),
      expect.stringMatching(/^status: a job number \(a whole number from 0 up\) comes here; received "x"; usage: status \[ID\]/),
      '',
    ]);
  });

  it.skipIf(skip)('--json: one JSON object per line, carrying the same facts as the text', async () => {
    const script = [
      // One stream per job: how two streams interleave may differ between the two runs.
      `background printf 'one\\ntwo\\n' >&2; exit 3`,
      'background echo four; exec sleep 60',
      'status 0',
      'status 1 --lines 1',
      'kill 1',
      'status',
      '/job-kill 7',
      'help kill',
    ].join('\n');
    const run = async (args: string[]) => {
      const cli = startCli(['--yes', '--containment', mode, ...args]);
      cli.write(`${script}\n`);
      cli.endInput();
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      return cli.out;
    };
    const [text, json] = await Promise.all([run([]), run(['--json'])]);
    const objects = json
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, any>);
    expect(objects.map((object) => object.type)).toEqual(['answer', 'answer', 'answer', 'answer', 'answer', 'answer', 'answer', 'help', 'end']);

    // The same texts as the text run (up to elapsed times), in the same order.
    const texts = objects.map((object) => (object.type === 'end' ? `session ended: stopped ${object.stopped} jobs` : object.text)).join('\n');
    expect(withoutElapsed(`${texts}\n`)).toBe(withoutElapsed(text));

    // Each report's structured fields state what its text states.
    for (const object of objects.filter((o) => o.job)) {
      const facts = factsOf(object.text);
      expect({ id: object.job.id, state: object.job.state, exitCode: object.job.exitCode, signal: object.job.signal, command: object.job.command }).toEqual({
        id: facts.id,
        state: facts.state,
        exitCode: facts.state === 'exited' ? facts.exitCode : object.job.exitCode,
        signal: facts.signal,
        command: facts.command,
      });
      const lines = (object.job.output?.lines ?? []).map((line: { stream: string; text: string }) => `${line.stream === 'stderr' ? '!' : '>'} ${line.text}`);
      expect(lines).toEqual(facts.lines);
      // `text` is as the shell writes it (hints in its commands); the report's own text is the model's.
      expect(object.job.text.replace(/job_status \{"id": (\d+)\}/g, 'status $1').replace(/job_kill \{"id": (\d+)\}/g, 'kill $1')).toBe(object.text);
      expect(object.job.text).toMatch(/job_status \{"id": \d+\}/);
    }
    const [started, , read0, read1, killed, list, missing] = objects;
    expect(started!.job).toMatchObject({ id: 0, state: 'exited', exitCode: 3, command: `printf 'one\\ntwo\\n' >&2; exit 3` });
    expect(started!.job.output.lines).toEqual([expect.objectContaining({ stream: 'stderr', text: 'one' }), expect.objectContaining({ stream: 'stderr', text: 'two' })]);
    expect(read0!.job).toMatchObject({ id: 0, state: 'exited', exitCode: 3 });
    expect(read1!.input).toEqual({ id: 1, lines: 1 });
    expect(read1!.job).toMatchObject({ id: 1, state: 'running', output: { lines: [expect.objectContaining({ text: 'four' })] } });
    expect(killed!.job).toMatchObject({ id: 1, state: 'killed', signal: 'SIGTERM', cleanedUp: true });
    expect(list!.list.jobs.map((job: { id: number; state: string }) => [job.id, job.state])).toEqual([
      [0, 'exited'],
      [1, 'killed'],
    ]);
    expect(list!.list).toMatchObject({ running: 0, maxJobs: 8 });
    expect(list!.text.split('\n').at(-1)).toBe('0 of 8 running');
    expect(missing).toMatchObject({ tool: '/job-kill', refused: true, text: '/job-kill: there is no job 7. The jobs are 0, 1. job_status {} lists every job.' });
    expect(objects.at(-1)).toMatchObject({ type: 'end', stopped: 0, jobs: [expect.objectContaining({ id: 0 }), expect.objectContaining({ id: 1 })] });
  });

  it.skipIf(skip)('on a terminal: asks, remembers "always" for that exact command only, Ctrl-C clears the line, tab completes, Ctrl-D ends every job', async () => {
    const oracle = new EofOracle();
    try {
      const cli = startCli(['--containment', mode], { pty: true });
      await cli.next('heph-jobs> ');
      const first = `${oracle.prefix}echo first; exec sleep 60`;

      // Asked once; "always" answers it for the rest of the session...
      cli.write(`background ${first}\r`);
      await cli.next(`Allow background(${first})? [y]es / [n]o / [a]lways: `);
      cli.write('a'); // one key, no Enter
      expect(await cli.next(/stops it\.\n/)).toMatch(/^a\njob 0 running \d:\d\d .*echo first; exec sleep 60.*\n> first\n/);
      await cli.next('heph-jobs> ');
      cli.write(`background ${first}\r`);
      const again = await cli.next(/stops it\.\n/);
      expect(again).toMatch(/job 1 running \d:\d\d .*echo first/);
      expect(again).not.toContain('Allow');
      // ...for that exact command only: another one is asked about.
      await cli.next('heph-jobs> ');
      const other = `${oracle.prefix}echo other; exec sleep 60`;
      cli.write(`background ${other}\r`);
      await cli.next(`Allow background(${other})? [y]es / [n]o / [a]lways: `);
      cli.write('n');
      expect(await cli.next(/\n.*\n/)).toBe(`n\nThe user denied background(${other}); nothing was started. Do not repeat this call; ask the user what to do instead.\n`);
      // Ctrl-C on a question answers no.
      await cli.next('heph-jobs> ');
      cli.write(`background ${other}\r`);
      await cli.next(`Allow background(${other})? [y]es / [n]o / [a]lways: `);
      cli.write('\x03');
      await cli.next(`The user denied background(${other})`);

      // Ctrl-C on a prompt clears the line (nothing runs) and the session goes on.
      await cli.next('heph-jobs> ');
      cli.write('background echo never-run');
      await cli.next('never-run');
      cli.write('\x03');
      await cli.next('heph-jobs> ');
      // Tab completion of the command word, then of a job number.
      await cli.type('sta');
      cli.write('\t');
      await cli.next('status ');
      await cli.type('0 --lines 1\r');
      expect(await cli.next(/stops it\.\n/)).toMatch(/job 0 running \d:\d\d .*echo first.*\n> first\n/);
      await cli.next('heph-jobs> ');
      await cli.type('kill ');
      cli.write('\t\t');
      await cli.next(/0\s+1\s*\n/); // both job numbers offered
      cli.write('\x15'); // Ctrl-U: drop the half-typed line
      cli.write('status\r');
      expect(await cli.next(/running\n/)).toMatch(/job 0 running .*\njob 1 running .*\n2 of 8 running\n$/);

      // /job-kill: the user's own stop, never asked about.
      await cli.next('heph-jobs> ');
      cli.write('/job-kill 1\r');
      const stopped = await cli.next(/with status 1\.\n/);
      expect(stopped).toMatch(/job 1 killed SIGTERM /);
      expect(stopped).not.toContain('Allow');

      // watch: the live table, until a key; the key does not leak into the next line.
      await cli.next('heph-jobs> ');
      cli.write('watch\r');
      await cli.next(/ID\s+STATE\s+ELAPSED\s+PROCS\s+MEM\s+CPU\s+PORTS\s+COMMAND\s+LAST LINE/);
      await cli.next(/ 0\s+running\s+\d:\d\d .*first/);
      await cli.next('q returns to the shell');
      cli.write('q');
      await cli.next('heph-jobs> ');
      cli.write('status 0 --lines 1\r');
      expect(await cli.next(/stops it\.\n/)).toMatch(/^status 0 --lines 1\njob 0 running /);
      expect(cli.out).toContain('\x1b[?1049h'); // the alternate screen, given back after
      expect(cli.out).toContain('\x1b[?1049l');

      expect(oracle.closed).toBe(false); // negative control: job 0 still runs
      await cli.next('heph-jobs> ');
      cli.write('\x04'); // Ctrl-D
      await cli.next('session ended: stopped 1 job');
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('on a terminal, /job-kill and reads run at once while a command is still busy (waiting for a lock)', async () => {
    const oracle = new EofOracle();
    try {
      const resource = `port:${40_000 + Math.floor(Math.random() * 20_000)}`;
      const cli = startCli(['--yes', '--containment', mode], { pty: true });
      await cli.next('heph-jobs> ');
      cli.write(`background --locks ${resource} ${oracle.prefix}exec sleep 60\r`);
      await cli.next(/job 0 running .*\n/);
      await cli.next('heph-jobs> ');
      cli.write(`background --locks ${resource} echo second\r`); // waits: job 0 holds the resource
      // The wait shows only in status, which runs at once meanwhile: read until job 1 is listed waiting.
      let list = '';
      for (let reads = 0; !/job 1 waiting/.test(list); reads++) {
        if (reads === 100) throw new Error(`job 1 never showed as waiting; last list:\n${list}`);
        cli.write('status\r');
        list = await cli.next(/\d+ of 8 running\n/);
      }
      expect(list).toMatch(/job 0 running .*\njob 1 waiting \d:\d\d echo second\n1 of 8 running\n$/);
      cli.write('/job-kill 1\r');
      // Both answers: the busy background's (job 1 never started) and /job-kill's.
      await cli.next(/job 1 cancelled \d:\d\d echo second\njob 1 never started: it was stopped while it waited for its locks/);
      await cli.next(/job 1 cancelled \d:\d\d echo second\njob 1 never started: it was stopped while it waited for its locks/);
      await cli.next('heph-jobs> ');
      cli.write('quit\r');
      await cli.next('session ended: stopped 1 job');
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('heph-jobs watch -- CMD...: starts the commands, redraws the table until a key, then ends every job', async () => {
    const oracle = new EofOracle();
    try {
      const cli = startCli(['--containment', mode, '--interval', '100', 'watch', '--', `${oracle.prefix}exec ${FIXTURES}/forever.sh`, 'echo done-now'], { pty: true });
      await cli.next(/ID\s+STATE\s+ELAPSED\s+PROCS\s+MEM\s+CPU\s+PORTS\s+COMMAND\s+LAST LINE/);
      await cli.next(/heph-jobs watch · 1 of 8 running/); // another frame
      await cli.next(/ 0\s+running\s+\d:\d\d\s+2\s+.* exec 9>.*\s+ready/); // forever.sh and its sleep
      await cli.next(/ 1\s+exited 0\s+\d:\d\d .*echo done-now\s+done-now/);
      await cli.next('q quits: every job is stopped');
      expect(oracle.closed).toBe(false);
      cli.write('q');
      await cli.next('session ended: stopped 1 job');
      expect(await cli.exited).toEqual({ code: 0, signal: null });
      await oracle.waitEof();
    } finally {
      oracle.dispose();
    }
  });

  it.skipIf(skip)('heph-jobs --json watch without a terminal: a JSON frame per interval until every job has ended', async () => {
    const cli = startCli(['--containment', mode, '--json', '--interval', '50', 'watch', '--', 'echo a; exit 2']);
    expect(await cli.exited).toEqual({ code: 0, signal: null });
    const objects = cli.out
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, any>);
    const frames = objects.filter((object) => object.type === 'watch');
    expect(frames.length).toBeGreaterThanOrEqual(1);
    expect(frames.at(-1)!.jobs).toEqual([expect.objectContaining({ id: 0, state: 'exited', exitCode: 2, command: 'echo a; exit 2', lastLine: 'a' })]);
    expect(objects.at(-1)).toMatchObject({ type: 'end', stopped: 0 });
  });
});

describe('heph-jobs command line', () => {
  it('--help, --version, and a bad argument (exit status 2, the usage on stderr)', async () => {
    const help = startCli(['--help']);
    expect(await help.exited).toEqual({ code: 0, signal: null });
    expect(help.out).toMatch(/^Usage:\n {2}heph-jobs \[options\] /);
    const version = startCli(['--version']);
    expect(await version.exited).toEqual({ code: 0, signal: null });
    expect(version.out).toMatch(/^\d+\.\d+\.\d+\n$/);
    const bad = startCli(['--max-jobs', 'lots']);
    expect(await bad.exited).toEqual({ code: 2, signal: null });
    expect(bad.err).toMatch(/^heph-jobs: --max-jobs must be a whole number from 1 to 1024; received "lots"\n\nUsage:/);
    const cwd = startCli(['--cwd', '/nonexistent/dir']);
    expect(await cwd.exited).toEqual({ code: 2, signal: null });
    expect(cwd.err).toBe('heph-jobs: --cwd /nonexistent/dir is not a directory\n');
  });
});
