/**
 * The addon loader (supervisor/native.ts): the order it tries files in (HEPH_JOBS_ADDON alone;
 * else build/Release, build/Debug, then the prebuilds node-gyp-build's rules fit to this machine),
 * an error that lists every path tried with its error, the fallback past a broken local build,
 * and the errno names it adds to the addon's errors.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { ADDON_OVERRIDE_ENV, addonCandidates, errnoName, loadAddonFrom, native } from '../../supervisor/native.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const SHIPPED = path.join(ROOT, `prebuilds/linux-${process.arch}/heph_jobs.napi.glibc.node`);
const here = `linux-${process.arch}`;
const elsewhere = process.arch === 'x64' ? 'linux-arm64' : 'linux-x64';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

/** A package root holding the given files (path -> content, or a file to copy). */
function fakeRoot(files: Record<string, string | { copy: string }>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-loader-'));
  roots.push(root);
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    if (typeof content === 'string') fs.writeFileSync(path.join(root, file), content);
    else fs.copyFileSync(content.copy, path.join(root, file));
  }
  return root;
}

describe('addon candidates', () => {
  it('are the local builds, then the prebuilds that fit this machine (best first)', () => {
    const root = fakeRoot({
      [`prebuilds/${here}/heph_jobs.napi.glibc.node`]: '',
      [`prebuilds/${here}/heph_jobs.napi.musl.node`]: '',
      [`prebuilds/${here}/heph_jobs.napi.node`]: '',
      [`prebuilds/${here}/README.md`]: '',
      [`prebuilds/${elsewhere}/heph_jobs.napi.glibc.node`]: '',
      ['prebuilds/darwin-x64+arm64/heph_jobs.napi.node']: '',
    });
    expect(addonCandidates(root, {})).toEqual([
      path.join(root, 'build/Release/heph_jobs.node'),
      path.join(root, 'build/Debug/heph_jobs.node'),
      path.join(root, `prebuilds/${here}/heph_jobs.napi.glibc.node`),
      path.join(root, `prebuilds/${here}/heph_jobs.napi.node`),
    ]);
  });

  it(`are ${ADDON_OVERRIDE_ENV} alone when it is set`, () => {
    const root = fakeRoot({ 'build/Release/heph_jobs.node': '', [`prebuilds/${here}/heph_jobs.napi.glibc.node`]: '' });
    expect(addonCandidates(root, { [ADDON_OVERRIDE_ENV]: '/some/where/addon.node' })).toEqual(['/some/where/addon.node']);
  });
});

describe('loading', () => {
  it('fails with every path tried and every error', () => {
    const root = fakeRoot({
      'build/Release/heph_jobs.node': 'not an ELF file',
      [`prebuilds/${here}/heph_jobs.napi.glibc.node`]: 'not an ELF file either',
    });
    let message = '';
    try {
      loadAddonFrom(root, {});
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('the native addon could not be loaded');
    expect(message).toContain('npm rebuild heph-jobs');
    expect(message).toMatch(new RegExp(`${path.join(root, 'build/Release/heph_jobs.node')}: .*(invalid ELF header|file too short)`));
    expect(message).toContain(`${path.join(root, 'build/Debug/heph_jobs.node')}: no such file`);
    expect(message).toMatch(new RegExp(`${path.join(root, `prebuilds/${here}/heph_jobs.napi.glibc.node`)}: .*(invalid ELF header|file too short)`));
  });

  it(`tries nothing else when ${ADDON_OVERRIDE_ENV} names a file that does not load`, () => {
    const root = fakeRoot({ [`prebuilds/${here}/heph_jobs.napi.glibc.node`]: { copy: SHIPPED } });
    expect(() => loadAddonFrom(root, { [ADDON_OVERRIDE_ENV]: path.join(root, 'missing.node') })).toThrow(
      new RegExp(`${ADDON_OVERRIDE_ENV} names the only binary to load.*\\n  ${path.join(root, 'missing.node')}: no such file$`, 's'),
    );
  });

  // In a child process: it loads a second copy of the addon, which this test worker does not need.
  it('falls back past a broken local build to the prebuild', async () => {
    const root = fakeRoot({
      'build/Release/heph_jobs.node': 'a stale, broken build',
      [`prebuilds/${here}/heph_jobs.napi.glibc.node`]: { copy: SHIPPED },
    });
    const script = `
      const { loadAddonFrom } = await import(${JSON.stringify(path.join(ROOT, 'dist/supervisor/native.js'))});
      const { addon, file } = loadAddonFrom(${JSON.stringify(root)}, {});
      console.log(JSON.stringify({ file, functions: typeof addon.spawn }));
    `;
    const env = { ...process.env };
    delete env[ADDON_OVERRIDE_ENV];
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { env, timeout: 20_000 });
    expect(JSON.parse(stdout)).toEqual({ file: path.join(root, `prebuilds/${here}/heph_jobs.napi.glibc.node`), functions: 'function' });
  });
});

describe('errno names', () => {
  it('are Node’s, including those libuv does not name', () => {
    expect([2, 9, 10, 13, 24, 37, 122].map(errnoName)).toEqual(['ENOENT', 'EBADF', 'ECHILD', 'EACCES', 'EMFILE', 'ENOLCK', 'EDQUOT']);
    expect([0, -2, 1.5, 100_000].map(errnoName)).toEqual(['UNKNOWN', 'UNKNOWN', 'UNKNOWN', 'UNKNOWN']);
  });

  it('are added to the errors the addon throws, which carry only errno and syscall', () => {
    const unused = 1_000_000; // above any fd this worker has open
    expect(() => native.closeFd(unused)).toThrow(expect.objectContaining({ code: 'EBADF', errno: 9, syscall: 'close' }));
  });
});
