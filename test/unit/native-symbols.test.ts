/**
 * Every addon binary in the tree (the local builds and every shipped prebuild) asks of the system
 * only what glibc 2.28 and GCC 8's libstdc++ provide, so the prebuilt one loads wherever Node 20
 * runs (RHEL 8, Debian 10, Ubuntu 20.04 and newer). Read from the ELF headers with readelf, as the
 * dynamic linker reads them; the policy is scripts/native-symbols.mjs's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseReadelf, policyProblems, readRequirements } from '../../scripts/native-symbols.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SHIPPED = path.join(ROOT, 'prebuilds/linux-x64/heph_jobs.napi.glibc.node');

function binaries(): string[] {
  const local = ['build/Release/heph_jobs.node', 'build/Debug/heph_jobs.node'].map((file) => path.join(ROOT, file));
  const prebuilds = fs.existsSync(path.join(ROOT, 'prebuilds'))
    ? fs.readdirSync(path.join(ROOT, 'prebuilds')).flatMap((dir) =>
        fs.readdirSync(path.join(ROOT, 'prebuilds', dir)).map((file) => path.join(ROOT, 'prebuilds', dir, file)),
      )
    : [];
  return [...local, ...prebuilds].filter((file) => file.endsWith('.node') && fs.existsSync(file));
}

describe('native symbol versions', () => {
  it('the linux-x64 prebuild is shipped', () => {
    expect(binaries()).toContain(SHIPPED);
  });

  it.each(binaries().map((file) => [path.relative(ROOT, file), file]))('%s needs nothing newer than glibc 2.28 / GCC 8', (_name, file) => {
    const requirements = readRequirements(file);
    // The reader sees what is there (a binary always needs some libc version), so an empty
    // problem list below is a finding, not a parse that found nothing.
    expect(requirements.needed).toContain('libc.so.6');
    expect(requirements.versions).toContainEqual({ library: 'libc.so.6', version: expect.stringMatching(/^GLIBC_2\./) });
    expect(policyProblems(requirements)).toEqual([]);
  });

  // Negative controls: the policy rejects what the old binary needed (strerrorname_np and
  // pthread_sigmask@GLIBC_2.32, condition_variable::wait@GLIBCXX_3.4.30), an unknown library
  // and a private version; and the parser reads real readelf output.
  it('rejects GLIBC_2.32, GLIBCXX_3.4.30, GLIBC_PRIVATE and a library outside the list', () => {
    const problems = policyProblems({
      needed: ['libc.so.6', 'libatomic.so.1'],
      versions: [
        { library: 'libc.so.6', version: 'GLIBC_2.2.5' },
        { library: 'libc.so.6', version: 'GLIBC_2.28' },
        { library: 'libc.so.6', version: 'GLIBC_2.32' },
        { library: 'libstdc++.so.6', version: 'GLIBCXX_3.4.30' },
        { library: 'libc.so.6', version: 'GLIBC_PRIVATE' },
      ],
    });
    expect(problems).toEqual([
      expect.stringContaining('libatomic.so.1'),
      expect.stringContaining('GLIBC_2.32'),
      expect.stringContaining('GLIBCXX_3.4.30'),
      expect.stringContaining('GLIBC_PRIVATE'),
    ]);
  });

  it('parses readelf -d -V output', () => {
    const text = [
      'Dynamic section at offset 0x1d0b8 contains 29 entries:',
      '  Tag        Type                         Name/Value',
      ' 0x0000000000000001 (NEEDED)             Shared library: [libstdc++.so.6]',
      ' 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]',
      "Version needs section '.gnu.version_r' contains 2 entries:",
      ' Addr: 0x0000000000001d28  Offset: 0x001d28  Link: 4 (.dynstr)',
      '  000000: Version: 1  File: libstdc++.so.6  Cnt: 1',
      '  0x0010:   Name: GLIBCXX_3.4.30  Flags: none  Version: 3',
      '  0x0020: Version: 1  File: libc.so.6  Cnt: 2',
      '  0x0030:   Name: GLIBC_2.32  Flags: none  Version: 4',
      '  0x0040:   Name: GLIBC_2.2.5  Flags: none  Version: 2',
    ].join('\n');
    expect(parseReadelf(text)).toEqual({
      needed: ['libstdc++.so.6', 'libc.so.6'],
      versions: [
        { library: 'libstdc++.so.6', version: 'GLIBCXX_3.4.30' },
        { library: 'libc.so.6', version: 'GLIBC_2.32' },
        { library: 'libc.so.6', version: 'GLIBC_2.2.5' },
      ],
    });
    expect(policyProblems(parseReadelf(text))).toHaveLength(2);
  });
});
