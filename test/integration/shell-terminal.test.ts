/**
 * The shell as a person meets it on a real terminal (tmux: keys sent, the screen read back, colours
 * included): one-key approvals, Ctrl-C stopping a command's wait while the job runs on (or keeps
 * its place), "did you mean", hints in the shell's own commands, `logs -f`, the interactive
 * `watch`, and the history a second session finds. Jobs are checked against kernel truth (a FIFO
 * every job process inherits reaching EOF); each step waits for the screen to show its effect.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EofOracle } from '../helpers/kernel.js';
import { MODES, modeRows } from '../helpers/modes.js';
import { tempDir } from '../helpers/runtime.js';
import { TmuxShell, withoutSgr } from '../helpers/tmux.js';

/** The UI does not depend on the containment mode: the tests that are about the UI alone use one. */
const MODE = MODES[0]!;
/** A foreground colour as capture-pane writes one (39, the default colour, is none). */
const FOREGROUND_COLOUR = /\x1b\[(?:3[0-7]|9[0-7]|38;[\d;]+)m/;

/** The prompt as the screen shows it (capture-pane drops the blanks that end a line). */
const PROMPT = 'heph-jobs>';

/** The last line of the screen is the prompt, with nothing typed after it. */
const atEmptyPrompt = (screen: string) => screen.split('\n').at(-1) === PROMPT;

function uniquePort(): string {
  return `port:${40_000 + Math.floor(Math.random() * 20_000)}`;
}

/** A FIFO, and a job command that echoes each line written to it (`err ...` to stderr). */
function lineFeeder(): { fifo: string; command: string; write(text: string): void } {
  const fifo = path.join(tempDir(), 'lines');
  execFileSync('mkfifo', [fifo]);
  return {
    fifo,
    command: `exec 3<>${fifo}; while read -r l <&3; do case "$l" in partial) printf 'Password: ';; err*) echo "$l" >&2;; *) echo "out $l";; esac; done`,
    // The job holds the FIFO open for reading and writing, so this open never blocks.
    write: (text) => fs.writeFileSync(fifo, text),
  };
}

/** A shell (approving everything) whose job 0 is a lineFeeder holding `oracle`, started with `flags`. */
async function feederJob(oracle: EofOracle, flags = ''): Promise<{ shell: TmuxShell; feeder: ReturnType<typeof lineFeeder> }> {
  const feeder = lineFeeder();
  const shell = new TmuxShell(['--containment', MODE, '--yes']);
  await shell.see(PROMPT);
  shell.line(`background ${flags}${oracle.prefix}${feeder.command}`);
  await shell.see('status 0 reads more; kill 0 stops it.');
  return { shell, feeder };
}

describe('the shell on a terminal', () => {
  it('approvals take one key: y, n, a without Enter; another key re-asks; Ctrl-C and Ctrl-D answer no', async () => {
    const oracle = new EofOracle();
    try {
      const shell = new TmuxShell(['--containment', MODE]);
      await shell.see(PROMPT);
      const command = `${oracle.prefix}echo hello; exec sleep 60`;
      shell.line(`background ${command}`);
      await shell.see(`Allow background(${command})? [y]es / [n]o / [a]lways:`);
      // Keys that come together (pasted, or typed ahead) never answer, though each would alone.
      await shell.typeRead('nay');
      shell.type('x'); // not an answer: said, and asked again
      const reasked = await shell.see(/Press y \(yes, this once\), n \(no\) or a \(always.*\n.*Allow background.*\[a\]lways:$/);
      expect(reasked.match(/Press y/g)).toHaveLength(1); // the x alone: the burst said nothing
      expect(reasked).not.toMatch(/denied|job 0/);
      shell.type('y'); // no Enter
      await shell.see('status 0 reads more; kill 0 stops it.');
      // The key went to the question only: the next prompt is empty.
      expect(await shell.until((screen) => atEmptyPrompt(screen), 'an empty prompt')).toBe(true);

      shell.line('kill 0');
      await shell.see('Allow job_kill(');
      shell.keys('C-d');
      await shell.see('The user denied job_kill(');
      shell.line('kill 0');
      await shell.until((screen) => screen.split('Allow job_kill(').length === 3, 'the second question');
      shell.keys('C-c');
      await shell.until((screen) => screen.split('The user denied job_kill(').length === 3, 'the second denial');
      expect(shell.gone).toBe(false); // neither key ended the session
      expect(oracle.closed).toBe(false); // negative control: nothing was stopped

      shell.line('kill 0');
      await shell.until((screen) => screen.split('Allow job_kill(').length === 4, 'the third question');
      shell.type('a');
      await shell.see(/job 0 killed SIGTERM .*\n> hello\njob 0 has ended; its output stays readable with status 0\./);
      await oracle.waitEof();
      shell.line('quit');
      await shell.see('session ended: stopped 0 jobs');
    } finally {
      oracle.dispose();
    }
  });

  it('a mistyped command or flag gets "did you mean"; the hints are written as the shell takes them', async () => {
    const shell = new TmuxShell(['--containment', MODE, '--yes']);
    await shell.see(PROMPT);
    shell.line('stauts');
    await shell.see('unknown command "stauts"; did you mean status? (help lists the commands)');
    shell.line('status');
    await shell.see('no jobs yet; background CMD starts one.');
    shell.line('background echo hi; exec sleep 60');
    await shell.see('status 0 reads more; kill 0 stops it.');
    shell.line('status 0 --line 1');
    await shell.see('status: unknown flag --line (did you mean --lines? its flags are');
    shell.line('help stauts');
    await shell.see('help: there is no command "stauts"; did you mean status?');
    // The model's syntax never shows: its hints would read job_status {"id": 0}.
    expect(shell.screen()).not.toMatch(/job_status \{|job_kill \{|background \{/);
  });

  it('logs prints what is kept; logs -f follows live (stderr in red, an unfinished line as it stands) until Ctrl-C; the job runs on', async () => {
    const oracle = new EofOracle();
    try {
      const { shell, feeder } = await feederJob(oracle);
      feeder.write('one\nerr two\n');
      shell.line('logs -f 0');
      await shell.see(/logs -f 0\nout one\nerr two$/);
      feeder.write('three\n');
      await shell.see(/out one\nerr two\nout three$/);
      // stderr lines are red, stdout lines are not.
      const colours = shell.screen(true);
      expect(colours).toContain('\x1b[31merr two');
      expect(colours).not.toMatch(/\x1b\[31mout (one|three)/);
      feeder.write('partial\n');
      await shell.see(/out three\nPassword:$/);
      feeder.write('four\n');
      await shell.see(/out three\nPassword: out four$/);
      shell.keys('C-c');
      await shell.see(/Password: out four\n\^C\nheph-jobs>$/);
      expect(oracle.closed).toBe(false); // only the follow stopped

      // Without -f: what is kept, and straight back to the prompt.
      shell.line('logs 0');
      await shell.see(/logs 0\nout one\nerr two\nout three\nPassword: out four\nheph-jobs>$/);
      shell.line('logs 7');
      await shell.see(/logs: .*7/);
    } finally {
      oracle.dispose();
    }
  });

  it('background --notify: a match is told at the prompt as it comes, above what is being typed, and once', async () => {
    const oracle = new EofOracle();
    try {
      const { shell, feeder } = await feederJob(oracle, '--notify FAIL ');
      await shell.until(atEmptyPrompt, 'the prompt after background');
      await shell.typeRead('stat');
      // Lines that do not match are not told (the negative control): only the second (seq 1) is.
      feeder.write('ok 1\nFAIL here\n');
      const told = await shell.see(/\n\(job 0 running [\s\S]*?: line 1 matches "FAIL": out FAIL here\)\nheph-jobs> stat$/);
      expect(told.match(/matches "FAIL"/g)).toHaveLength(1);
      // What was typed is still there: Enter runs it, and its answer does not tell the match again.
      shell.line('us 0');
      const answered = await shell.see(/heph-jobs> status 0\n[\s\S]*> out FAIL here\n[\s\S]*heph-jobs>$/);
      expect(answered.match(/matches "FAIL"/g)).toHaveLength(1);
      expect(oracle.closed).toBe(false);
    } finally {
      oracle.dispose();
    }
  });

  it('watch: arrows select, Enter follows the job\'s output and any key returns, k asks before stopping, q leaves; states and stderr in colour', async () => {
    const stopped = new EofOracle();
    const other = new EofOracle();
    try {
      const feeder = lineFeeder();
      const shell = new TmuxShell(['--containment', MODE, '--yes', '--interval', '200']);
      await shell.see(PROMPT);
      shell.line(`background ${stopped.prefix}echo to-stderr >&2; exec sleep 60`);
      await shell.see('status 0 reads more');
      shell.line(`background ${other.prefix}${feeder.command}`);
      await shell.see('status 1 reads more');
      shell.line('watch');
      await shell.see(/ID\s+STATE\s+ELAPSED/);
      // Job 0 selected (reverse video), running in green, its stderr line in red.
      // (capture-pane writes each change of a cell's attributes as its own SGR sequences.)
      const first = await shell.see(/\x1b\[7m +0 +\x1b\[32mrunning\x1b\[39m +\d[^\x1b]*\x1b\[31m! to-stderr/, 10_000, true);
      expect(first).toMatch(/\n(?:\x1b\[[0-9;]*m)*(?<!\x1b\[7m) 1 +\x1b\[32mrunning/); // job 1 not selected
      shell.keys('Down');
      await shell.see(/\x1b\[7m +1 +\x1b\[32mrunning/, 10_000, true);

      // Enter: job 1's output as it comes; any key goes back to the table.
      shell.keys('Enter');
      await shell.see(/job 1 · .* · its output as it comes · any key returns to the table/);
      feeder.write('live\n');
      await shell.see(/its output as it comes.*\nout live$/);
      shell.type('x');
      await shell.see(/ID\s+STATE\s+ELAPSED/);

      // k asks; anything but y leaves the job alone; y stops it.
      shell.keys('Up');
      await shell.see(/\x1b\[7m +0 /, 10_000, true);
      shell.type('k');
      await shell.see(/stop job 0\? y stops it, any other key does not · exec 9>/);
      shell.type('n');
      await shell.see('job 0 was not stopped');
      expect(stopped.closed).toBe(false);
      shell.type('k');
      await shell.see('y stops it, any other key does not');
      shell.type('y');
      await shell.see(/job 0 killed SIGTERM/);
      await stopped.waitEof();
      expect(other.closed).toBe(false); // negative control: the other job was not touched

      shell.type('q');
      await shell.until(atEmptyPrompt, 'the prompt after watch');
      expect(withoutSgr(shell.screen())).not.toContain('ID  STATE'); // the table was on the alternate screen
    } finally {
      stopped.dispose();
      other.dispose();
    }
  });

  it('watch with NO_COLOR (negative control for the colours): no colour, the selection still shows', async () => {
    const shell = new TmuxShell(['--containment', MODE, '--yes', '--interval', '200'], { env: { NO_COLOR: '1' } });
    await shell.see(PROMPT);
    shell.line('background echo to-stderr >&2; exec sleep 60');
    await shell.see('status 0 reads more');
    shell.line('watch');
    const screen = await shell.see(/\x1b\[7m +0 +running .*! to-stderr/, 10_000, true);
    expect(screen).not.toMatch(FOREGROUND_COLOUR);
    shell.type('q');
    await shell.until(atEmptyPrompt, 'the prompt after watch');
  });

  it('history is kept between sessions (0700 folder, 0600 file), without the answers to questions', async () => {
    const state = tempDir();
    const first = new TmuxShell(['--containment', MODE], { stateDir: state });
    await first.see(PROMPT);
    for (const line of ['status', 'help logs', 'background echo from-the-first-session']) {
      first.line(line);
    }
    await first.see('[a]lways:');
    // Read on its own: a `y` that shared a read with the next line's keys would be a burst, which
    // never answers a question. Then the job's output line (`> ...`) is waited for, not the words
    // in the echo of the command line, which were on the screen before the answer.
    await first.typeRead('y');
    await first.see(/^> from-the-first-session$/m);
    first.line('quit');
    await first.see('session ended');
    await first.kill();

    const file = path.join(state, 'heph-jobs', 'history');
    expect(fs.readFileSync(file, 'utf8')).toBe('status\nhelp logs\nbackground echo from-the-first-session\nquit\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);

    const second = new TmuxShell(['--containment', MODE], { stateDir: state });
    await second.see(PROMPT);
    second.keys('Up');
    await second.see(/heph-jobs> quit$/);
    second.keys('Up');
    await second.see(/heph-jobs> background echo from-the-first-session$/);
    second.keys('Up');
    await second.see(/heph-jobs> help logs$/);
    second.keys('Enter');
    await second.see('logs [-f] ID');
  });
});

describe.each(modeRows())('Ctrl-C on a command that waits (%s)', (mode, skip) => {
  it.skipIf(skip)('stops the wait and returns to the prompt: a status --wait, a background waiting for its locks (which keeps its place)', async () => {
    const holder = new EofOracle();
    try {
      const resource = uniquePort();
      const shell = new TmuxShell(['--containment', mode, '--yes']);
      await shell.see(PROMPT);
      shell.line(`background --locks ${resource} ${holder.prefix}echo holding; exec sleep 60`);
      await shell.see('status 0 reads more');

      // Enter and Ctrl-C read together: the line counts as under way, and its wait is stopped.
      // (Ctrl-C once the command surely waits is the background case below.)
      shell.type('status 0 --wait 600');
      shell.keys('Enter', 'C-c');
      const status = await shell.see(/status 0 --wait 600\n\^C\njob 0 running .*\n> holding\nstatus 0 reads more; kill 0 stops it\.\nheph-jobs>$/);
      expect(status).not.toMatch(/\(waited /); // the wait was stopped, not run out
      expect(holder.closed).toBe(false); // the job runs on

      shell.line(`background --locks ${resource} echo kept-its-place`);
      // The person sees at once that it waits, for what and held by whom, and what Ctrl-C does
      // (issue 13 item 4).
      // (The screen is 120 columns wide: a long line wraps, and a space at the wrap is not kept.)
      const squeezed = (text: string) => text.replace(/\s+/g, '');
      const unwrapped = () => squeezed(shell.screen());
      const waitingLine =
        `job 1 waits for its locks (${resource}): ${resource} is held by job 0 (${holder.prefix}echo holding; exec sleep 60). ` +
        'Ctrl-C stops waiting; job 1 keeps its place and starts by itself (kill 1 gives up on it).';
      await shell.until(() => unwrapped().includes(squeezed(waitingLine)), 'the line saying job 1 waits');
      // It waits; reads run at once meanwhile, and show it waiting.
      await shell.until(() => {
        shell.line('status');
        return /job 1 waiting .*echo kept-its-place/.test(shell.screen());
      }, 'job 1 to wait for its locks');
      shell.keys('C-c');
      await shell.see(
        `job 1 has not started: it waits for its locks: ${resource}. status 1 shows when it runs; kill 1 gives up on it.`,
      );
      // Ctrl-C left it queued, and the answer says so.
      expect(unwrapped()).toContain(
        squeezed(`${resource} is held by job 0 (${holder.prefix}echo holding; exec sleep 60); job 1 keeps its place and starts by itself once they are free)`),
      );
      await shell.until(atEmptyPrompt, 'the prompt');

      // Its place was kept: once the holder is gone, it runs.
      shell.line('/job-kill 0');
      await holder.waitEof();
      shell.line('status 1 --wait 10');
      await shell.see(/job 1 exited 0 .*echo kept-its-place\n> kept-its-place/);
    } finally {
      holder.dispose();
    }
  });
});
