/**
 * A doc comment sits on its declaration (issue 27, item 5): one that a move left behind reads as
 * the doc of whatever follows. Each `/** ... *\/` past a file's header must be followed at once by
 * code, not by a blank line, an import or another comment.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Doc comments of `text` not followed at once by code: `line: first line of the comment`. */
function strayDocComments(text: string): string[] {
  const lines = text.split('\n');
  const stray: string[] = [];
  // The file's header comes first (after a shebang): it documents the module, not the next line.
  let at = lines[0]?.startsWith('#!') ? 1 : 0;
  while (at < lines.length && lines[at]!.trim() === '') at++;
  let header = true;
  for (let line = at; line < lines.length; line++) {
    if (!lines[line]!.trim().startsWith('/**')) {
      if (lines[line]!.trim() !== '') header = false;
      continue;
    }
    const start = line;
    while (line < lines.length && !lines[line]!.includes('*/')) line++;
    const next = (lines[line + 1] ?? '').trim();
    if (!(header && start === at) && (next === '' || next.startsWith('import ') || next.startsWith('//') || next.startsWith('/*'))) {
      stray.push(`${start + 1}: ${lines[start]!.trim().slice(0, 60)}`);
    }
    header = false;
  }
  return stray;
}

function sourceFiles(folder: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

describe('doc comments', () => {
  it('each is followed by its declaration, in src/ and supervisor/', () => {
    const files = [...sourceFiles('src'), ...sourceFiles('supervisor')];
    expect(files.length).toBeGreaterThan(80);
    const stray = files.flatMap((file) => strayDocComments(fs.readFileSync(file, 'utf8')).map((found) => `${path.relative(ROOT, file)}:${found}`));
    expect(stray).toEqual([]);
  });

  it('negative control: a doc comment left above a blank line or another doc comment is caught, a header is not', () => {
    const text = [
      '#!/usr/bin/env node',
      '/** The module. */',
      "import fs from 'node:fs';",
      '',
      '/** Orphaned by a move. */',
      '',
      '/** Two in a row: the first is stray. */',
      '/** The real one. */',
      'export function f(): void {}',
    ].join('\n');
    expect(strayDocComments(text)).toEqual(['5: /** Orphaned by a move. */', '7: /** Two in a row: the first is stray. */']);
  });
});
