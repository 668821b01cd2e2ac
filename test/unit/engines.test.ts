/**
 * package.json's `engines` says exactly what CI tests: each range `^X.Y.Z` of it is tested at its
 * first release (X.Y.Z) and its newest (X) by .github/workflows/ci.yml's matrix, nothing else is,
 * and the README states the same versions (a line from its first release as `X`, else `X.Y+`).
 * The Node running this test is one of them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; type: string };
const ranges = manifest.engines.node.split('||').map((range) => range.trim());

function ciMatrix(): string[] {
  const workflow = fs.readFileSync(path.join(ROOT, '.github/workflows/ci.yml'), 'utf8');
  const line = /^\s*node: (\[.*\])\s*$/m.exec(workflow);
  expect(line, 'ci.yml has a one-line node: [...] matrix').not.toBeNull();
  return JSON.parse(line![1]!.replaceAll("'", '"')) as string[];
}

describe('engines', () => {
  it('are caret ranges from a first release of each line CI tests', () => {
    expect(ranges.every((range) => /^\^\d+\.\d+\.\d+$/.test(range))).toBe(true);
    const tested = ranges.flatMap((range) => [range.slice(1), range.slice(1).split('.')[0]!]);
    expect(ciMatrix().sort()).toEqual(tested.sort());
  });

  it('hold for the Node running the tests', () => {
    const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
    const floor = ranges.map((range) => range.slice(1).split('.').map(Number)).find(([m]) => m === major);
    expect(floor, `Node ${process.versions.node} is outside ${manifest.engines.node}`).toBeDefined();
    expect(minor).toBeGreaterThanOrEqual(floor![1]!);
  });

  it('are what the README says, for an ESM-only package', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    const said = ranges.map((range) => {
      const [major, minor] = range.slice(1).split('.');
      return minor === '0' ? major : `${major}.${minor}+`;
    });
    expect(readme).toContain(`Node.js ${said.slice(0, -1).join(', ')} or ${said.at(-1)}`);
    expect(manifest.type).toBe('module');
    expect(readme).toContain('ESM only');
  });
});
