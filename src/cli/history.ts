/**
 * The shell's command history, kept between sessions in the XDG state directory:
 * `$XDG_STATE_HOME/heph-jobs/history`, by default `~/.local/state/heph-jobs/history`. The folder
 * is made private (0700) and the file is written private (0600), replaced whole (a temporary
 * file renamed over it) so a crash never leaves half a history. At most `HISTORY_SIZE` lines,
 * newest first in memory (readline's order), oldest first in the file (as a shell's). Only the
 * lines typed at the prompt are given here: answers to questions never are.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Lines kept, in memory and on disk. */
export const HISTORY_SIZE = 1000;

/** Where the history lives, from the environment (XDG Base Directory: only an absolute XDG_STATE_HOME counts). */
export function historyFile(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string {
  const state = env.XDG_STATE_HOME;
  const base = state && path.isAbsolute(state) ? state : path.join(home, '.local', 'state');
  return path.join(base, 'heph-jobs', 'history');
}

/** The saved lines, newest first; none when there is no file yet. Other failures are thrown. */
export function loadHistory(file: string, size = HISTORY_SIZE): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(-size)
    .reverse();
}

/** Writes `lines` (newest first, as readline keeps them), at most `size` of them. */
export function saveHistory(file: string, lines: readonly string[], size = HISTORY_SIZE): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const kept = lines.filter((line) => line.trim() !== '' && !line.includes('\n')).slice(0, size);
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    fs.rmSync(temporary, { force: true }); // a stale one would keep its mode
    fs.writeFileSync(temporary, kept.length === 0 ? '' : `${[...kept].reverse().join('\n')}\n`, { mode: 0o600 });
    fs.renameSync(temporary, file);
  } catch (error) {
    fs.rmSync(temporary, { force: true });
    throw error;
  }
}
