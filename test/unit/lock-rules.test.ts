import { describe, expect, it } from 'vitest';
import { HephError } from '../../src/protocol/errors.js';
import { expandRules, validateLockRules, type LockRules } from '../../src/locks/index.js';

function thrown(fn: () => unknown): HephError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(HephError);
    return error as HephError;
  }
  throw new Error('expected an error, nothing was thrown');
}

const rules: LockRules = {
  background: ['worktree:{ref}'],
  job_kill: ['worktree:{ref}'],
  publish: ['worktree:{ref}', { resource: 'path:{worktree}/node_modules/', mode: 'shared' }, 'port:{port}'],
  shell: [],
};

describe('expandRules', () => {
  it('expands placeholders and validates the result', () => {
    expect(expandRules(rules, 'background', { ref: 'main' })).toEqual([
      { resource: 'worktree:main', kind: 'worktree', value: 'main', mode: 'exclusive' },
    ]);
    expect(
      expandRules(rules, 'publish', { ref: 'feature/x', worktree: '/repo/wt/x', port: 5173 }).map((r) => [r.resource, r.mode]),
    ).toEqual([
      ['path:/repo/wt/x/node_modules', 'shared'],
      ['port:5173', 'exclusive'],
      ['worktree:feature/x', 'exclusive'],
    ]);
  });

  it('returns no resources for a name without rules or with an empty list', () => {
    expect(expandRules(rules, 'job_status', { ref: 'main' })).toEqual([]);
    expect(expandRules(rules, 'shell', {})).toEqual([]);
    expect(expandRules(rules, 'toString', {})).toEqual([]); // not an own property
  });

  it('names the template and the available variables when a variable is missing', () => {
    const error = thrown(() => expandRules(rules, 'publish', { ref: 'main', port: 1 }));
    expect(error.code).toBe('ERR_BAD_LOCK_RULE');
    expect(error.message).toContain('"path:{worktree}/node_modules/"');
    expect(error.message).toContain('"publish"');
    expect(error.message).toContain('needs {worktree}, which this call does not provide');
    expect(error.message).toContain('ref="main"');
    expect(error.message).toContain('port=1');
    expect(error.message).toContain('worktree (not set by this call)');
  });

  it('names an unknown placeholder', () => {
    const error = thrown(() => expandRules({ background: ['worktree:{branch}'] }, 'background', { ref: 'main' }));
    expect(error.code).toBe('ERR_BAD_LOCK_RULE');
    expect(error.message).toContain('"worktree:{branch}"');
    expect(error.message).toContain('unknown placeholder {branch}');
    expect(error.message).toContain('variables available: ref="main", worktree (not set by this call)');
  });

  it('reports an expansion that is not a valid resource, naming the template', () => {
    const relative = thrown(() => expandRules(rules, 'publish', { ref: 'main', worktree: 'relative/wt', port: 1 }));
    expect(relative.code).toBe('ERR_BAD_RESOURCE');
    expect(relative.message).toContain('"path:{worktree}/node_modules/"');
    expect(relative.message).toContain('must be an absolute path');
    const newline = thrown(() => expandRules(rules, 'background', { ref: 'a\nb' }));
    expect(newline.code).toBe('ERR_BAD_RESOURCE');
    expect(newline.message).toContain('a newline');
  });

  it('rejects malformed templates', () => {
    expect(thrown(() => expandRules({ x: ['worktree:{ref'] }, 'x', { ref: 'a' })).message).toContain('is never closed');
    expect(thrown(() => expandRules({ x: ['worktree:ref}'] }, 'x', { ref: 'a' })).message).toContain('closes no "{"');
    expect(thrown(() => expandRules({ x: ['worktree:{}'] }, 'x', { ref: 'a' })).message).toContain('is not a name');
  });
});

describe('validateLockRules', () => {
  it('accepts a well-formed rule set', () => {
    expect(validateLockRules(rules)).toBe(rules);
  });

  it('rejects bad shapes with what is accepted', () => {
    const notObject = thrown(() => validateLockRules(['worktree:{ref}']));
    expect(notObject.code).toBe('ERR_BAD_LOCK_RULE');
    expect(notObject.message).toContain('{ background: ["worktree:{ref}"] }');
    expect(thrown(() => validateLockRules({ background: 'worktree:{ref}' })).message).toContain(
      'lock rules for "background" must be an array',
    );
    expect(thrown(() => validateLockRules({ background: [42] })).message).toContain('a template must be a string');
    expect(thrown(() => validateLockRules({ background: ['worktree:{ref'] })).message).toContain('never closed');
  });
});
