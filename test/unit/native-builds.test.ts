import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDifferences, readCmakeBuild, readGypBuild, type BuildContext } from '../helpers/native-builds.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const GYP = path.join(root, 'binding.gyp');
const CMAKE = path.join(root, 'CMakeLists.txt');

// Every combination the builds meet: a developer's install and CI (HEPH_WERROR=1), under the
// common.gypi of Node 20 (gnu++17) and of Node 22 (gnu++20).
const contexts: BuildContext[] = [false, true].flatMap((werror) =>
  ['-std=gnu++17', '-std=gnu++20'].map((nodeGypStandard) => ({ werror, nodeGypStandard })),
);

describe('the node-gyp and cmake-js builds are the same build', () => {
  it.each(contexts)('binding.gyp and CMakeLists.txt agree (werror $werror, node-gyp $nodeGypStandard)', (context) => {
    expect(buildDifferences(readGypBuild(GYP, context), readCmakeBuild(CMAKE, context))).toEqual([]);
  });

  it('builds every native/*.cc file with the chosen standard, warnings, RTTI, exceptions and defines', () => {
    const settings = readCmakeBuild(CMAKE, { werror: false, nodeGypStandard: '-std=gnu++17' });
    const onDisk = fs.readdirSync(path.join(root, 'native')).filter((name) => name.endsWith('.cc')).map((name) => `native/${name}`).sort();
    expect(settings.sources).toEqual(onDisk);
    expect(settings.standard).toBe('c++17');
    expect(settings.warnings).toEqual(['-Wall', '-Wextra']);
    expect(settings.rtti).toBe(false);
    expect(settings.exceptions).toBe(true);
    expect(settings.optimisation).toBe('-O3');
    expect(settings.defines).toEqual(
      expect.arrayContaining(['NAPI_VERSION=8', 'NAPI_CPP_EXCEPTIONS', 'NODE_ADDON_API_DISABLE_DEPRECATED', '_GNU_SOURCE']),
    );
    expect(readCmakeBuild(CMAKE, { werror: true, nodeGypStandard: '-std=gnu++17' }).warnings).toContain('-Werror');
  });

  describe('negative control: a modified copy of one file makes the comparison fail', () => {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-native-builds-'));
    afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

    const mutations = [
      { file: CMAKE, from: '  -fno-rtti\n', to: '', setting: 'rtti' },
      { file: CMAKE, from: 'set(CMAKE_CXX_EXTENSIONS OFF)\n', to: '', setting: 'standard' },
      { file: CMAKE, from: '"-O3 -DNDEBUG"', to: '"-O2 -DNDEBUG"', setting: 'optimisation' },
      { file: CMAKE, from: '  _GNU_SOURCE\n', to: '', setting: 'defines' },
      { file: GYP, from: '"NAPI_VERSION=8"', to: '"NAPI_VERSION=9"', setting: 'defines' },
      { file: GYP, from: '"cflags!": ["-Wno-unused-parameter", ', to: '"cflags!": [', setting: 'warnings' },
      { file: CMAKE, from: '  -fexceptions\n', to: '  -fno-exceptions\n', setting: 'exceptions' },
      { file: GYP, from: '"-fno-rtti",', to: '"-frtti",', setting: 'rtti' },
      { file: GYP, from: '"-std=c++17",', to: '', setting: 'standard' },
      { file: GYP, from: '"native/reaper.cc",\n        "native/spawn.cc"', to: '"native/reaper.cc"', setting: 'sources' },
    ];

    it.each(mutations)('$setting: $from -> $to in $file', ({ file, from, to, setting }) => {
      const original = fs.readFileSync(file, 'utf8');
      expect(original).toContain(from);
      const copy = path.join(scratch, path.basename(file));
      fs.writeFileSync(copy, original.replace(from, to));
      const context = { werror: false, nodeGypStandard: '-std=gnu++17' };
      const gyp = readGypBuild(file === GYP ? copy : GYP, context);
      const cmake = readCmakeBuild(file === CMAKE ? copy : CMAKE, context);
      const differences = buildDifferences(gyp, cmake);
      expect(differences.map((line) => line.split(':')[0])).toContain(setting);
    });
  });
});
