/**
 * Which binary a test run uses is certain: the supervisor's /proc/<pid>/maps shows exactly one
 * `.node` file, the one HEPH_JOBS_ADDON names (CI sets it for each suite run: the shipped
 * prebuild, the cmake-js build, the node-gyp build), else the first the loader finds. The
 * negative control points a second runtime at a copy of that binary and must see the copy, so the
 * oracle really tells binaries apart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JobRuntime } from '../../src/index.js';
import { supervisorPid } from '../../src/testing.js';
import { ADDON_OVERRIDE_ENV, addonCandidates } from '../../supervisor/native.js';
import { tempDir } from '../helpers/runtime.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const expected = fs.realpathSync(addonCandidates(ROOT).find((file) => fs.existsSync(file)) ?? `(none of ${addonCandidates(ROOT).join(', ')})`);

const runtimes: JobRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

/** The `.node` files the runtime's supervisor has mapped, after it ran a job. */
async function supervisorAddons(env: Record<string, string | undefined> = {}): Promise<string[]> {
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  // The supervisor inherits the runtime's environment; set only while it starts.
  Object.assign(process.env, env);
  let runtime: JobRuntime;
  try {
    runtime = await JobRuntime.start({ settleMs: 0 });
    runtimes.push(runtime);
    await runtime.background({ command: 'true' });
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
  const pid = supervisorPid(runtime);
  expect(pid).not.toBeNull();
  const maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n');
  const files = maps.map((line) => line.split(/\s+/).slice(5).join(' ')).filter((file) => file.endsWith('.node'));
  return [...new Set(files)];
}

describe('the addon a supervisor runs', () => {
  it(`is ${path.relative(ROOT, expected) || expected}${process.env[ADDON_OVERRIDE_ENV] ? ` (${ADDON_OVERRIDE_ENV})` : ''}, and only it`, async () => {
    expect(await supervisorAddons()).toEqual([expected]);
  });

  it(`negative control: ${ADDON_OVERRIDE_ENV} pointing at a copy maps the copy`, async () => {
    const copy = path.join(tempDir(), 'copy-of-the-addon.node');
    fs.copyFileSync(expected, copy);
    expect(await supervisorAddons({ [ADDON_OVERRIDE_ENV]: copy })).toEqual([copy]);
  });
});
