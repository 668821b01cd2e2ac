/**
 * The supervisor ends through exitNow (supervisor/cleanup/shutdown.ts), never process.exit: Node's
 * exit can hang for good in its platform teardown (nodejs/node#54918; a supervisor stuck so, with
 * its runtime and jobs gone, was found on Node 26), and a supervisor must not outlive its runtime.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SUPERVISOR = path.resolve(import.meta.dirname, '../../supervisor');

/** `file:line` of each process.exit / process.reallyExit call in `text`. */
function exitCalls(file: string, text: string): string[] {
  return [...text.matchAll(/\bprocess\.(?:exit|reallyExit)\s*\(/g)].map((match) => `${file}:${text.slice(0, match.index).split('\n').length}`);
}

describe('how the supervisor exits', () => {
  it('never through process.exit', () => {
    const files = fs.readdirSync(SUPERVISOR, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile() && entry.name.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(30);
    const found = files.flatMap((entry) => {
      const file = path.join(entry.parentPath, entry.name);
      return exitCalls(path.relative(SUPERVISOR, file), fs.readFileSync(file, 'utf8'));
    });
    expect(found).toEqual([]);
  });

  it('negative control: a planted process.exit is found', () => {
    expect(exitCalls('planted.ts', "close();\nprocess.exit(0);\n")).toEqual(['planted.ts:2']);
  });
});
