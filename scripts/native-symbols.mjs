// @ts-check
/**
 * What a built addon asks of the system's shared libraries, read from its ELF headers with
 * readelf(1) (`-d`: the libraries it needs; `-V`: the symbol versions it needs from each), and the
 * policy it must meet so that the prebuilt binary loads wherever Node 20 does: glibc 2.28 (RHEL 8,
 * Debian 10; Node 20's own floor) and GCC 8's libstdc++ (the one those systems ship).
 *
 * Used by scripts/prebuild.mjs (it refuses to write a binary that fails) and by
 * test/unit/native-symbols.test.ts (every build and prebuild in the tree).
 */
import { execFileSync } from 'node:child_process';

/** The newest version of each symbol-version family a binary may require. */
export const NEWEST_ALLOWED = {
  GLIBC: '2.28', // glibc 2.28: RHEL 8, Debian 10
  GLIBCXX: '3.4.25', // libstdc++ of GCC 8: RHEL 8, Debian 10
  CXXABI: '1.3.11', // libstdc++ of GCC 8
  GCC: '8.0.0', // libgcc_s of GCC 8
};

/** The only libraries the addon may link against: present on every glibc system Node runs on. */
export const ALLOWED_LIBRARIES = ['libc.so.6', 'libm.so.6', 'libstdc++.so.6', 'libgcc_s.so.1'];

/**
 * @typedef {{ library: string, version: string }} RequiredVersion
 * @typedef {{ needed: string[], versions: RequiredVersion[] }} ElfRequirements
 */

/** Parses `readelf -d -V -W` output: NEEDED entries and the version-needs section (.gnu.version_r). */
export function parseReadelf(/** @type {string} */ text) {
  /** @type {ElfRequirements} */
  const result = { needed: [], versions: [] };
  let library = null;
  for (const line of text.split('\n')) {
    const needed = /\(NEEDED\)\s+Shared library: \[(.+)\]/.exec(line);
    if (needed) result.needed.push(needed[1]);
    const file = /^\s*(?:0x)?[0-9a-f]+:\s+Version: \d+\s+File: (\S+)/.exec(line);
    if (file) library = file[1];
    const name = /^\s*0x[0-9a-f]+:\s+Name: (\S+)\s+Flags/.exec(line);
    if (name && library) result.versions.push({ library, version: name[1] });
  }
  return result;
}

/** Reads what `file` needs. */
export function readRequirements(/** @type {string} */ file) {
  const text = execFileSync('readelf', ['-d', '-V', '-W', file], { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
  return parseReadelf(text);
}

function compareVersions(/** @type {string} */ a, /** @type {string} */ b) {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const diff = (left[i] ?? 0) - (right[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** Every way `requirements` breaks the policy, as sentences; empty when it meets it. */
export function policyProblems(/** @type {ElfRequirements} */ requirements) {
  const problems = [];
  for (const library of requirements.needed) {
    if (!ALLOWED_LIBRARIES.includes(library)) problems.push(`needs ${library}, which is not one of ${ALLOWED_LIBRARIES.join(', ')}`);
  }
  for (const { library, version } of requirements.versions) {
    const match = /^(GLIBC|GLIBCXX|CXXABI|GCC)_(\d+(?:\.\d+)*)$/.exec(version);
    if (!match) {
      problems.push(`needs ${version} from ${library}, a version outside the policy`);
      continue;
    }
    const family = /** @type {keyof typeof NEWEST_ALLOWED} */ (match[1]);
    if (compareVersions(match[2], NEWEST_ALLOWED[family]) > 0) {
      problems.push(`needs ${version} from ${library}, newer than ${family}_${NEWEST_ALLOWED[family]}`);
    }
  }
  return problems;
}
