/** The shell's history file: where it lives (XDG), its privacy, its bound, and its round trip. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { historyFile, loadHistory, saveHistory } from '../../src/cli/history.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
function temp(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-test-history-'));
  dirs.push(dir);
  return dir;
}

describe('historyFile', () => {
  it('is $XDG_STATE_HOME/heph-jobs/history, else ~/.local/state/heph-jobs/history', () => {
    expect(historyFile({ XDG_STATE_HOME: '/state' }, '/home/me')).toBe('/state/heph-jobs/history');
    expect(historyFile({}, '/home/me')).toBe('/home/me/.local/state/heph-jobs/history');
    // The spec ignores a relative (or empty) value.
    expect(historyFile({ XDG_STATE_HOME: 'relative' }, '/home/me')).toBe('/home/me/.local/state/heph-jobs/history');
    expect(historyFile({ XDG_STATE_HOME: '' }, '/home/me')).toBe('/home/me/.local/state/heph-jobs/history');
  });
});

describe('saving and loading', () => {
  it('round-trips, newest first in memory and oldest first in the file; folder 0700, file 0600', () => {
    const file = path.join(temp(), 'state', 'heph-jobs', 'history');
    expect(loadHistory(file)).toEqual([]); // no file yet
    saveHistory(file, ['status 0', 'background npm run dev']);
    expect(fs.readFileSync(file, 'utf8')).toBe('background npm run dev\nstatus 0\n');
    expect(loadHistory(file)).toEqual(['status 0', 'background npm run dev']);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['history']); // no temporary file left
  });

  it('keeps at most the newest `size` lines, on disk and when read', () => {
    const file = path.join(temp(), 'history');
    const lines = Array.from({ length: 30 }, (_, i) => `status ${29 - i}`); // newest first
    saveHistory(file, lines, 10);
    expect(fs.readFileSync(file, 'utf8').trimEnd().split('\n')).toEqual(Array.from({ length: 10 }, (_, i) => `status ${20 + i}`));
    fs.writeFileSync(file, `${Array.from({ length: 30 }, (_, i) => `help ${i}`).join('\n')}\n`);
    expect(loadHistory(file, 5)).toEqual(['help 29', 'help 28', 'help 27', 'help 26', 'help 25']);
  });

  it('a file that cannot be read is an error, not an empty history', () => {
    const dir = temp();
    expect(() => loadHistory(dir)).toThrow(/EISDIR/);
  });
});
