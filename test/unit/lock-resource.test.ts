import { describe, expect, it } from 'vitest';
import { HephError } from '../../src/protocol/errors.js';
import {
  BadResourceError,
  MAX_RESOURCE_LENGTH,
  normalizeResources,
  overlaps,
  parseResource,
  resourcesConflict,
  type NormalizedResource,
} from '../../src/locks/index.js';

function catchError(fn: () => unknown): BadResourceError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(BadResourceError);
    expect(error).toBeInstanceOf(HephError);
    expect((error as BadResourceError).code).toBe('ERR_BAD_RESOURCE');
    return error as BadResourceError;
  }
  throw new Error('expected a BadResourceError, nothing was thrown');
}

const ex = (resource: string): NormalizedResource => normalizeResources([resource])[0]!;
const sh = (resource: string): NormalizedResource => normalizeResources([{ resource, mode: 'shared' }])[0]!;

describe('parseResource', () => {
  it('accepts kind:value and splits it', () => {
    expect(parseResource('port:5173')).toEqual({ resource: 'port:5173', kind: 'port', value: '5173' });
    expect(parseResource('worktree:main')).toEqual({ resource: 'worktree:main', kind: 'worktree', value: 'main' });
    // Only the first colon separates; the value may contain more.
    expect(parseResource('url:http://x:1')).toEqual({ resource: 'url:http://x:1', kind: 'url', value: 'http://x:1' });
    expect(parseResource('my-kind2:x').kind).toBe('my-kind2');
  });

  it('normalises path values', () => {
    expect(parseResource('path:/repo/node_modules/').resource).toBe('path:/repo/node_modules');
    expect(parseResource('path:/repo/./a/../b//c').resource).toBe('path:/repo/b/c');
    expect(parseResource('path://repo').resource).toBe('path:/repo');
    expect(parseResource('path:/..').resource).toBe('path:/');
    expect(parseResource('path:/').resource).toBe('path:/');
  });

  it('rejects an empty string', () => {
    const error = catchError(() => parseResource(''));
    expect(error.message).toContain('bad lock resource ""');
    expect(error.message).toContain('it is empty');
    expect(error.message).toContain('expected "kind:value"');
  });

  it('rejects a string without a colon, showing what was received', () => {
    const error = catchError(() => parseResource('port5173'));
    expect(error.message).toContain('"port5173"');
    expect(error.message).toContain('no ":"');
    expect(error.details['received']).toBe('port5173');
  });

  it('rejects an uppercase kind', () => {
    const error = catchError(() => parseResource('Port:5173'));
    expect(error.message).toContain('"Port:5173"');
    expect(error.message).toContain('the kind "Port" may only contain lowercase letters, digits and "-"');
  });

  it('rejects an empty kind and an empty value', () => {
    expect(catchError(() => parseResource(':x')).message).toContain('kind before ":" is empty');
    expect(catchError(() => parseResource('port:')).message).toContain('value after ":" is empty');
  });

  it('rejects a relative path', () => {
    const error = catchError(() => parseResource('path:repo/node_modules'));
    expect(error.message).toContain('"path:repo/node_modules"');
    expect(error.message).toContain('must be an absolute path');
  });

  it('rejects NUL and newlines, saying where', () => {
    const nul = catchError(() => parseResource('port:51\u000073'));
    expect(nul.message).toContain('a NUL character at offset 7');
    expect(nul.message).toContain(JSON.stringify('port:51\u000073'));
    expect(catchError(() => parseResource('worktree:a\nb')).message).toContain('a newline at offset 10');
    expect(catchError(() => parseResource('worktree:a\rb')).message).toContain('a newline');
  });

  it('rejects a string over the length limit, cutting it in the message', () => {
    const long = `port:${'9'.repeat(MAX_RESOURCE_LENGTH)}`;
    const error = catchError(() => parseResource(long));
    expect(error.message).toContain(`it is ${long.length} characters long, more than ${MAX_RESOURCE_LENGTH}`);
    expect(error.message).toContain(`(${long.length} characters)`);
    expect(error.message.length).toBeLessThan(600);
    // Exactly at the limit is fine.
    expect(parseResource(long.slice(0, MAX_RESOURCE_LENGTH)).kind).toBe('port');
  });

  it('rejects non-strings', () => {
    expect(catchError(() => parseResource(5173)).message).toContain('must be a string, got number');
  });
});

describe('normalizeResources', () => {
  it('treats strings as exclusive and accepts { resource, mode }', () => {
    expect(normalizeResources(['port:1', { resource: 'path:/x/', mode: 'shared' }, { resource: 'port:2' }])).toEqual([
      { resource: 'path:/x', kind: 'path', value: '/x', mode: 'shared' },
      { resource: 'port:1', kind: 'port', value: '1', mode: 'exclusive' },
      { resource: 'port:2', kind: 'port', value: '2', mode: 'exclusive' },
    ]);
  });

  it('merges duplicates, exclusive wins, after normalisation', () => {
    const out = normalizeResources([{ resource: 'path:/a/', mode: 'shared' }, 'path:/a', { resource: 'path:/a/./', mode: 'shared' }]);
    expect(out).toEqual([{ resource: 'path:/a', kind: 'path', value: '/a', mode: 'exclusive' }]);
    expect(normalizeResources([{ resource: 'port:1', mode: 'shared' }, { resource: 'port:1', mode: 'shared' }])).toEqual([
      { resource: 'port:1', kind: 'port', value: '1', mode: 'shared' },
    ]);
  });

  it('rejects a bad mode, a lone string and non-arrays', () => {
    expect(catchError(() => normalizeResources([{ resource: 'port:1', mode: 'read' }])).message).toContain(
      'mode must be "exclusive" (the default) or "shared"',
    );
    expect(catchError(() => normalizeResources('port:1')).message).toContain('wrap a single resource in an array: ["port:1"]');
    expect(catchError(() => normalizeResources([42])).message).toContain('"kind:value" string or { resource, mode }');
    expect(catchError(() => normalizeResources([{ mode: 'shared' }])).message).toContain('needs a "resource" string');
  });
});

describe('conflicts', () => {
  it('non-path kinds conflict only on equal values of the same kind', () => {
    expect(resourcesConflict(ex('port:1'), ex('port:1'))).toBe(true);
    expect(resourcesConflict(ex('port:1'), ex('port:10'))).toBe(false);
    expect(resourcesConflict(ex('worktree:a'), ex('worktree:a/b'))).toBe(false);
    expect(resourcesConflict(ex('port:1'), ex('other:1'))).toBe(false);
  });

  it('a path covers everything below it, but not a sibling sharing a prefix', () => {
    expect(resourcesConflict(ex('path:/a'), ex('path:/a/b'))).toBe(true);
    expect(resourcesConflict(ex('path:/a/b/c'), ex('path:/a'))).toBe(true);
    expect(resourcesConflict(ex('path:/a'), ex('path:/ab'))).toBe(false);
    expect(resourcesConflict(ex('path:/a/b'), ex('path:/a/c'))).toBe(false);
    expect(resourcesConflict(ex('path:/'), ex('path:/anything/at/all'))).toBe(true);
    expect(resourcesConflict(ex('path:/a/'), ex('path:/a/b/../'))).toBe(true);
  });

  it('shared holds do not conflict with each other, but do with exclusive ones', () => {
    expect(resourcesConflict(sh('port:1'), sh('port:1'))).toBe(false);
    expect(resourcesConflict(sh('port:1'), ex('port:1'))).toBe(true);
    expect(resourcesConflict(ex('path:/a'), sh('path:/a/b'))).toBe(true);
    expect(resourcesConflict(sh('path:/a'), sh('path:/a/b'))).toBe(false);
  });

  it('overlaps() returns the conflicting pairs', () => {
    const pairs = overlaps(['worktree:main', 'path:/repo', { resource: 'port:1', mode: 'shared' }], [
      'path:/repo/node_modules',
      'worktree:other',
      { resource: 'port:1', mode: 'shared' },
      'path:/repository',
    ]);
    expect(pairs.map((p) => [p.a.resource, p.b.resource])).toEqual([['path:/repo', 'path:/repo/node_modules']]);
    expect(overlaps(['port:1'], ['port:2'])).toEqual([]);
  });
});
