/**
 * The package as a user gets it: `npm pack`, then `npm ci --ignore-scripts` of the tarball into an
 * empty folder whose PATH holds `node` and `sh` and nothing else (no cc, c++, g++, cmake, make), then a job
 * run through `import 'heph-jobs'` (start a runtime, background `echo hi`, read `hi`, close) on the
 * shipped prebuild, and `require('heph-jobs')` from CommonJS.
 *
 * No network: the consumer's lock file is the repository's own (its production entries, with the
 * tarball URLs npm derives from name and version), so `npm ci --offline` takes every package from
 * npm's cache by integrity: the cache `npm ci` of this repository has just filled, on any machine.
 *
 * The install script is checked with the same toolchain-free PATH: `npm rebuild heph-jobs` uses
 * the prebuild and compiles nothing; forcing a source build there fails (the negative control:
 * the PATH really has no compiler, so the success was not a silent compile).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isReaped, waitUntil, type SeenProcess } from '../helpers/kernel.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const REGISTRY = (process.env.npm_config_registry ?? 'https://registry.npmjs.org/').replace(/\/?$/, '/');
const TOOLCHAIN = ['cc', 'c++', 'gcc', 'g++', 'clang', 'cmake', 'make', 'ninja'];

interface PackResult {
  filename: string;
  integrity: string;
  files: { path: string }[];
}
interface LockEntry {
  name?: string;
  version?: string;
  resolved?: string;
  dev?: boolean;
  [key: string]: unknown;
}

let work = '';
let app = '';
let pack: PackResult;
let installed: { stdout: string; stderr: string };

/** npm's own entry script, run with this node: the user's PATH below has no npm on it. */
function npmCli(): string {
  const onPath = (process.env.PATH ?? '').split(':').map((dir) => path.join(dir, 'npm')).find((file) => fs.existsSync(file));
  const start = process.env.npm_execpath ?? onPath;
  if (!start) throw new Error('npm not found (neither npm_execpath nor npm on PATH)');
  return path.join(path.dirname(fs.realpathSync(start)), 'npm-cli.js');
}

/** The environment of a user with no toolchain: PATH is a folder holding only `node` and `sh` (npm runs scripts with it). */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    // Nothing of the outer npm run (npm_package_*, npm_lifecycle_*, prefixes), of CI's choice of
    // binary (HEPH_JOBS_ADDON) or of the test run reaches the user.
    if (key.startsWith('npm_') && !['npm_config_cache', 'npm_config_userconfig', 'npm_config_registry'].includes(key)) continue;
    if (key.startsWith('HEPH_') || key.startsWith('VITEST') || key === 'NODE_OPTIONS') continue;
    env[key] = value;
  }
  return { ...env, PATH: path.join(work, 'bin'), npm_config_update_notifier: 'false', ...extra };
}

function npm(args: string[], cwd: string, extra: Record<string, string> = {}) {
  return run(process.execPath, [npmCli(), ...args], { cwd, env: userEnv(extra), timeout: 120_000, maxBuffer: 16 << 20 });
}

/** The consumer's lock: the tarball, and the repository's production packages where they lie. */
function consumerLock(spec: string): object {
  const repo = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  const packages: Record<string, LockEntry> = {
    '': { name: 'consumer', version: '1.0.0', dependencies: { 'heph-jobs': spec } },
    'node_modules/heph-jobs': {
      version: manifest.version as string,
      resolved: spec,
      integrity: pack.integrity,
      hasInstallScript: true,
      license: manifest.license,
      os: manifest.os,
      engines: manifest.engines,
      dependencies: manifest.dependencies,
    },
  };
  for (const [key, entry] of Object.entries(repo.packages)) {
    if (key === '' || entry.dev || !key.startsWith('node_modules/')) continue;
    const name = entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const resolved = entry.resolved ?? `${REGISTRY}${name}/-/${name.split('/').at(-1)}-${entry.version}.tgz`;
    packages[key] = { ...entry, resolved };
  }
  return { name: 'consumer', version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-install-'));
  fs.mkdirSync(path.join(work, 'bin'));
  fs.symlinkSync(process.execPath, path.join(work, 'bin', 'node'));
  fs.symlinkSync('/bin/sh', path.join(work, 'bin', 'sh'));
  app = path.join(work, 'app');
  fs.mkdirSync(app);
  // --ignore-scripts: prepack would rebuild dist/ under the other test files; `npm test` built it.
  const packed = await run(process.execPath, [npmCli(), 'pack', '--ignore-scripts', '--json', '--pack-destination', app], {
    cwd: ROOT,
    env: userEnv(),
    timeout: 60_000,
  });
  pack = (JSON.parse(packed.stdout) as PackResult[])[0]!;
  const spec = `file:${pack.filename}`;
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, dependencies: { 'heph-jobs': spec } }));
  fs.writeFileSync(path.join(app, 'package-lock.json'), JSON.stringify(consumerLock(spec)));
  installed = await npm(['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], app).catch((error: { stderr?: string }) => {
    throw new Error(`npm ci --offline of the tarball failed (is npm's cache filled? run npm ci in the repository first):\n${error.stderr}`);
  });
}, 180_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('the packed package', () => {
  it(`holds the license, the built code, the linux-${process.arch} prebuild and what a source build needs`, () => {
    const files = pack.files.map((file) => file.path);
    expect(files).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'README.md',
        'package.json',
        'dist/src/index.js',
        'dist/src/index.d.ts',
        'dist/src/cli/main.js',
        'dist/supervisor/main.js',
        'dist/supervisor/native.js',
        'dist/supervisor/supervisor.launch.cjs',
        'dist/supervisor/supervisor.bundle.cjs.cache',
        `prebuilds/linux-${process.arch}/heph_jobs.napi.glibc.node`,
        'scripts/install.mjs',
        'scripts/supervisor-code-cache.mjs',
        'CMakeLists.txt',
        'binding.gyp',
        'native/addon.cc',
      ]),
    );
    expect(files.filter((file) => /^(build|test|src|supervisor|node_modules)\//.test(file))).toEqual([]);
    expect(fs.readFileSync(path.join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
  });

  it('installs with scripts off and no toolchain on PATH, and runs a job on the prebuild', async () => {
    const pathDirs = userEnv().PATH!.split(':');
    for (const tool of TOOLCHAIN) expect(pathDirs.filter((dir) => fs.existsSync(path.join(dir, tool)))).toEqual([]);
    expect(installed.stderr).not.toMatch(/cmake|g\+\+|gyp/i);
    const root = path.join(app, 'node_modules/heph-jobs');
    expect(fs.existsSync(path.join(root, 'build'))).toBe(false);

    const script = `
      import fs from 'node:fs';
      import { JobRuntime } from 'heph-jobs';
      const runtime = await JobRuntime.start();
      const job = await runtime.background({ command: 'echo hi', waitMs: 10000 });
      const report = await runtime.status(job.id);
      // The supervisor: this process's child running the package's supervisor entry.
      const stat = (pid) => {
        const text = fs.readFileSync('/proc/' + pid + '/stat', 'utf8');
        return text.slice(text.lastIndexOf(')') + 2).split(' '); // [state, ppid, ..., starttime at 19]
      };
      const supervisor = fs.readdirSync('/proc').filter((pid) => /^\\d+$/.test(pid)).find((pid) => {
        try {
          return Number(stat(pid)[1]) === process.pid && fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').includes('supervisor');
        } catch { return false; }
      });
      const start = stat(supervisor)[19];
      const addons = [...new Set(fs.readFileSync('/proc/' + supervisor + '/maps', 'utf8').split('\\n')
        .map((line) => line.split(/\\s+/).slice(5).join(' ')).filter((file) => file.endsWith('.node')))];
      await runtime.close();
      console.log(JSON.stringify({ state: report.state, exitCode: report.exitCode, lines: report.output.lines.map((line) => line.text), supervisor: Number(supervisor), start, addons }));
    `;
    fs.writeFileSync(path.join(app, 'run.mjs'), script);
    const { stdout } = await run(process.execPath, ['run.mjs'], { cwd: app, env: userEnv(), timeout: 30_000 });
    const seen = JSON.parse(stdout) as { state: string; exitCode: number; lines: string[]; supervisor: number; start: string; addons: string[] };
    expect(seen).toMatchObject({ state: 'exited', exitCode: 0, lines: ['hi'] });
    expect(seen.addons).toEqual([path.join(root, `prebuilds/linux-${process.arch}/heph_jobs.napi.glibc.node`)]);
    const supervisor: SeenProcess = { pid: seen.supervisor, start: seen.start };
    await waitUntil(() => isReaped(supervisor), `the consumer's supervisor ${seen.supervisor} to be gone`);
  });

  it('is required from CommonJS too (Node loads the ES module synchronously)', async () => {
    const { stdout } = await run(process.execPath, ['-e', "const m = require('heph-jobs'); console.log(typeof m.JobRuntime.start, typeof m.createTools)"], {
      cwd: app,
      env: userEnv(),
      timeout: 20_000,
    });
    expect(stdout.trim()).toBe('function function');
  });

  it('its install script takes the prebuild and compiles nothing; a forced source build fails there', async () => {
    const root = path.join(app, 'node_modules/heph-jobs');
    const rebuilt = await npm(['rebuild', 'heph-jobs', '--offline', '--foreground-scripts'], app);
    expect(rebuilt.stdout + rebuilt.stderr).toContain(`using the prebuilt native addon prebuilds/linux-${process.arch}/heph_jobs.napi.glibc.node`);
    expect(fs.existsSync(path.join(root, 'build'))).toBe(false);

    const forced = await npm(['rebuild', 'heph-jobs', '--offline', '--foreground-scripts'], app, { HEPH_JOBS_BUILD_FROM_SOURCE: '1' }).then(
      () => null,
      (error: { stdout: string; stderr: string }) => error,
    );
    expect(forced).not.toBeNull();
    expect(forced!.stdout + forced!.stderr).toContain('Building it needs CMake');
  });
});
