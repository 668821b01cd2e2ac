#!/usr/bin/env node
// @ts-check
/**
 * `npm run prebuild`: builds the addon for this machine with cmake-js, in a fresh temporary build
 * folder, and writes it as prebuilds/linux-<arch>/heph_jobs.napi.glibc.node, the prebuildify name
 * node-gyp-build (and so supervisor/native.ts) picks for a glibc Linux on that arch.
 *
 * `npm run prebuild -- --check` builds the same way and compares the result with the binary in
 * prebuilds/ byte for byte: it fails when the shipped binary is stale (native/ changed without a
 * new prebuild) or the build is not reproducible here. CI runs it on the kind of machine the
 * committed x64 prebuild is built on (Debian 12, GCC 12); elsewhere a different compiler gives
 * different bytes, which the message says.
 *
 * What keeps the output reproducible: a fresh build folder (no cached flags), no CFLAGS/CXXFLAGS/
 * LDFLAGS from the environment, N-API headers from node-api-headers (never Node's own, never a
 * download), no __FILE__ or timestamps in the code, and a content-derived build id.
 * The binary must load where Node 20 runs: scripts/native-symbols.mjs's policy (glibc 2.28,
 * GCC 8's libstdc++) is checked before anything is written.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { policyProblems, readRequirements } from './native-symbols.mjs';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const ARCHES = ['x64', 'arm64'];

/** The file name for this platform: prebuildify's `<name>.<tags>.node`, tagged napi and glibc. */
function prebuildPath(arch = process.arch) {
  return path.join(root, 'prebuilds', `linux-${arch}`, 'heph_jobs.napi.glibc.node');
}

function fail(message) {
  process.stderr.write(`prebuild: ${message}\n`);
  process.exit(1);
}

function sha256(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function compilerVersion() {
  const compiler = process.env.CXX || 'c++';
  try {
    return execFileSync(compiler, ['--version'], { encoding: 'utf8' }).split('\n')[0];
  } catch {
    return `${compiler} (version unknown)`;
  }
}

/** Builds into a fresh temporary folder; returns the built file (the folder is the caller's to remove). */
function build(buildDir) {
  const env = { ...process.env, HEPH_WERROR: '1' };
  for (const name of ['CFLAGS', 'CXXFLAGS', 'CPPFLAGS', 'LDFLAGS']) delete env[name];
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  const result = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', buildDir], { cwd: root, env, stdio: 'inherit' });
  if (result.status !== 0) fail(`cmake-js failed (exit ${result.status ?? result.signal})`);
  const built = path.join(buildDir, 'Release', 'heph_jobs.node');
  if (!fs.existsSync(built)) fail(`cmake-js reported success but ${built} does not exist`);
  return built;
}

/** Fails unless the binary meets the symbol policy and loads into this Node. */
function verify(file) {
  const problems = policyProblems(readRequirements(file));
  if (problems.length > 0) fail(`${file} would not load on every glibc Linux Node 20 runs on:\n  ${problems.join('\n  ')}`);
  const load = spawnSync(process.execPath, ['-e', 'require(process.argv[1])', file], { encoding: 'utf8' });
  if (load.status !== 0) fail(`${file} does not load: ${load.stderr.trim()}`);
}

function main() {
  const check = process.argv.includes('--check');
  if (process.platform !== 'linux') fail('prebuilds are made on Linux only');
  const report = /** @type {{ header: { glibcVersionRuntime?: string } }} */ (process.report.getReport());
  if (!report.header.glibcVersionRuntime) fail('this is not a glibc system; the prebuilds are glibc builds (tagged .glibc.)');
  if (!ARCHES.includes(process.arch)) fail(`no prebuild is made for ${process.arch} (only ${ARCHES.join(', ')})`);

  const target = prebuildPath();
  const buildDir = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-prebuild-'));
  try {
    const built = build(buildDir);
    verify(built);
    const compiler = compilerVersion();
    if (check) {
      if (!fs.existsSync(target)) fail(`${path.relative(root, target)} does not exist: run npm run prebuild`);
      const [fresh, shipped] = [sha256(built), sha256(target)];
      if (fresh !== shipped) {
        fail(
          `${path.relative(root, target)} (sha256 ${shipped}) differs from a fresh build (sha256 ${fresh}) with ${compiler}, glibc ` +
            `${report.header.glibcVersionRuntime}. Either native/ changed since the prebuild was made (run npm run prebuild and ` +
            'commit it) or this machine builds differently from the one that made it.',
        );
      }
      process.stdout.write(`prebuild: ${path.relative(root, target)} is what this source builds (sha256 ${fresh})\n`);
      return;
    }
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(built, target);
    process.stdout.write(`prebuild: wrote ${path.relative(root, target)} (sha256 ${sha256(target)}; ${compiler}, glibc ${report.header.glibcVersionRuntime})\n`);
  } finally {
    fs.rmSync(buildDir, { recursive: true, force: true });
  }
}

main();
