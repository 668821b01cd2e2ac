/**
 * Reads binding.gyp (node-gyp) and CMakeLists.txt (cmake-js) into the compiler settings each build
 * ends up with, so a test can check that the two build the same addon.
 *
 * node-gyp puts common.gypi's flags before ours and then applies our `!` removals; CMake puts the
 * Release flags first and its -std flag last. Both are modelled here for Linux Release builds.
 * Defines that only node-gyp's own plumbing adds (USING_V8_SHARED, NODE_GYP_MODULE_NAME, ...) and
 * -fPIC, which both tools add for a shared library, are not part of the comparison.
 */
import fs from 'node:fs';

export interface BuildSettings {
  sources: string[];
  defines: string[];
  /** The `-std=` value that wins (the last one on the command line). */
  standard: string;
  /** Every -W flag, -Werror included. */
  warnings: string[];
  rtti: boolean;
  exceptions: boolean;
  /** The -O flag that wins. */
  optimisation: string;
  /** Every other flag, e.g. -fno-omit-frame-pointer, -pthread. */
  otherFlags: string[];
}

export interface BuildContext {
  /** Whether HEPH_WERROR=1 is set when the build is configured (CI sets it). */
  werror: boolean;
  /** The -std flag node-gyp's common.gypi adds: gnu++17 up to Node 20, gnu++20 from Node 22. */
  nodeGypStandard: string;
}

/**
 * What node-gyp's common.gypi adds on Linux for a Release build (Node 20's
 * include/node/common.gypi: target_defaults cflags/cflags_cc, and the Release configuration).
 */
function nodeGypDefaults(context: BuildContext) {
  return {
    cflags: ['-pthread', '-Wall', '-Wextra', '-Wno-unused-parameter'],
    releaseCflags: ['-O3', '-fno-omit-frame-pointer'],
    cflagsCc: ['-fno-rtti', '-fno-exceptions', context.nodeGypStandard],
  };
}

/** What CMake uses for Release when CMAKE_CXX_FLAGS_RELEASE is not set. */
const CMAKE_DEFAULT_RELEASE_FLAGS = '-O3 -DNDEBUG';

function settingsFrom(sources: string[], defines: string[], flags: string[]): BuildSettings {
  const last = (pick: (flag: string) => boolean, fallback: string) => flags.filter(pick).at(-1) ?? fallback;
  const special = (flag: string) =>
    flag.startsWith('-std=') || (flag.startsWith('-W') && !flag.startsWith('-Wl,')) || /^-f(no-)?(rtti|exceptions)$/.test(flag) || /^-O/.test(flag);
  const unique = (values: string[]) => [...new Set(values)].sort();
  return {
    sources: unique(sources),
    defines: unique(defines),
    standard: last((flag) => flag.startsWith('-std='), '(compiler default)').slice('-std='.length),
    warnings: unique(flags.filter((flag) => flag.startsWith('-W') && !flag.startsWith('-Wl,'))),
    // g++ has RTTI and exceptions on unless told otherwise, and optimises nothing.
    rtti: last((flag) => /^-f(no-)?rtti$/.test(flag), '-frtti') === '-frtti',
    exceptions: last((flag) => /^-f(no-)?exceptions$/.test(flag), '-fexceptions') === '-fexceptions',
    optimisation: last((flag) => /^-O/.test(flag), '-O0'),
    otherFlags: unique(flags.filter((flag) => !special(flag) && flag !== '-fPIC')),
  };
}

// ---- binding.gyp --------------------------------------------------------------------------------

type GypTarget = Record<string, unknown>;

function stringList(target: GypTarget | undefined, key: string): string[] {
  const value = target?.[key];
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new Error(`binding.gyp: "${key}" must be a list of strings`);
  }
  return value;
}

/** The gyp conditions binding.gyp may use, evaluated; anything else is reported, not guessed. */
function gypCondition(expression: string, context: BuildContext): boolean {
  if (expression.replace(/\s/g, '') === 'heph_werror==1') return context.werror;
  throw new Error(`binding.gyp: condition ${JSON.stringify(expression)} is not modelled by test/helpers/native-builds.ts`);
}

export function parseGyp(text: string): { targets: GypTarget[]; variables?: Record<string, string> } {
  // gyp files are Python literals; ours is JSON plus whole-line # comments.
  const json = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n');
  return JSON.parse(json);
}

export function readGypBuild(file: string, context: BuildContext): BuildSettings {
  const gyp = parseGyp(fs.readFileSync(file, 'utf8'));
  const werrorVariable = gyp.variables?.['heph_werror%'] ?? '';
  if (!werrorVariable.includes('HEPH_WERROR')) throw new Error('binding.gyp: heph_werror% must be read from HEPH_WERROR');
  const target = gyp.targets.find((candidate) => candidate.target_name === 'heph_jobs');
  if (target === undefined) throw new Error('binding.gyp: no heph_jobs target');
  const release = (target.configurations as Record<string, GypTarget> | undefined)?.Release;
  const applied: GypTarget[] = [];
  for (const condition of (target.conditions as [string, GypTarget, GypTarget?][] | undefined) ?? []) {
    const branch = gypCondition(condition[0], context) ? condition[1] : condition[2];
    if (branch !== undefined) applied.push(branch);
  }
  const gather = (key: string) => [stringList(target, key), stringList(release, key), ...applied.map((part) => stringList(part, key))].flat();

  const defaults = nodeGypDefaults(context);
  const removedC = new Set(stringList(target, 'cflags!'));
  const removedCc = new Set(stringList(target, 'cflags_cc!'));
  // The make generator writes CFLAGS then CFLAGS_CC, each as common.gypi's flags followed by ours.
  const cflags = [...defaults.cflags, ...defaults.releaseCflags, ...gather('cflags')].filter((flag) => !removedC.has(flag));
  const cflagsCc = [...defaults.cflagsCc, ...gather('cflags_cc')].filter((flag) => !removedCc.has(flag));
  return settingsFrom(stringList(target, 'sources'), gather('defines'), [...cflags, ...cflagsCc]);
}

// ---- CMakeLists.txt -----------------------------------------------------------------------------

interface CmakeCommand {
  name: string;
  args: string[];
}

function stripCmakeComment(line: string): string {
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '"') quoted = !quoted;
    else if (line[i] === '#' && !quoted) return line.slice(0, i);
  }
  return line;
}

export function cmakeCommands(text: string): CmakeCommand[] {
  const code = text.split('\n').map(stripCmakeComment).join('\n');
  const commands: CmakeCommand[] = [];
  // Parentheses count only outside quotes; ours has no nested ones (no generator expressions).
  for (const match of code.matchAll(/([A-Za-z_]\w*)\s*\(((?:"[^"]*"|[^()"])*)\)/g)) {
    const args = [...(match[2] ?? '').matchAll(/"([^"]*)"|(\S+)/g)].map((arg) => (arg[1] !== undefined ? `"${arg[1]}"` : arg[2] ?? ''));
    commands.push({ name: (match[1] ?? '').toLowerCase(), args });
  }
  return commands;
}

/** The if() conditions CMakeLists.txt may use, evaluated; anything else is reported, not guessed. */
function cmakeCondition(args: string[], context: BuildContext): boolean {
  const expression = args.join(' ');
  if (expression === 'NOT CMAKE_BUILD_TYPE') return true;
  if (expression === '"$ENV{HEPH_WERROR}" STREQUAL "1"') return context.werror;
  if (args[0] === 'MSVC') return false;
  throw new Error(`CMakeLists.txt: condition ${JSON.stringify(expression)} is not modelled by test/helpers/native-builds.ts`);
}

export function readCmakeBuild(file: string, context: BuildContext): BuildSettings {
  const variables = new Map<string, string[]>();
  // Unknown variables (CMAKE_JS_SRC, PROJECT_NAME, ...) expand to nothing, as in CMake.
  const expand = (args: string[]) =>
    args.flatMap((arg) => {
      const whole = /^\$\{(\w+)\}$/.exec(arg);
      if (whole) return variables.get(whole[1] ?? '') ?? [];
      return [arg.replace(/^"(.*)"$/, '$1')];
    });
  let sources: string[] = [];
  const defines: string[] = [];
  const options: string[] = [];
  const active: boolean[] = [];

  for (const { name, args } of cmakeCommands(fs.readFileSync(file, 'utf8'))) {
    if (name === 'if') active.push(cmakeCondition(args, context));
    else if (name === 'endif') active.pop();
    else if (name === 'else' || name === 'elseif') throw new Error(`CMakeLists.txt: ${name}() is not modelled`);
    if (active.includes(false) || name === 'if' || name === 'endif') continue;
    const [first = '', ...rest] = args;
    switch (name) {
      case 'set':
        variables.set(first, expand(rest));
        break;
      case 'list':
        if (first !== 'APPEND') throw new Error(`CMakeLists.txt: list(${first}) is not modelled`);
        variables.set(rest[0] ?? '', [...(variables.get(rest[0] ?? '') ?? []), ...expand(rest.slice(1))]);
        break;
      case 'add_library':
        sources = expand(rest).filter((arg) => !['SHARED', 'STATIC', 'MODULE'].includes(arg));
        break;
      case 'add_definitions':
        defines.push(...expand(args).map((flag) => flag.replace(/^-D/, '')));
        break;
      case 'target_compile_definitions':
        defines.push(...expand(rest).filter((arg) => !['PRIVATE', 'PUBLIC', 'INTERFACE'].includes(arg)));
        break;
      case 'add_compile_options':
        options.push(...expand(args));
        break;
      case 'target_compile_options':
        options.push(...expand(rest).filter((arg) => !['PRIVATE', 'PUBLIC', 'INTERFACE'].includes(arg)));
        break;
    }
  }

  const releaseFlags = (variables.get('CMAKE_CXX_FLAGS_RELEASE')?.join(' ') ?? CMAKE_DEFAULT_RELEASE_FLAGS).split(/\s+/).filter(Boolean);
  defines.push(...releaseFlags.filter((flag) => flag.startsWith('-D')).map((flag) => flag.slice(2)));
  const standard = variables.get('CMAKE_CXX_STANDARD')?.[0];
  // CMake's extensions default is ON (gnu++NN); its -std flag comes after the target's options.
  const extensions = (variables.get('CMAKE_CXX_EXTENSIONS')?.[0] ?? 'ON').toUpperCase() !== 'OFF';
  const flags = [
    ...releaseFlags.filter((flag) => !flag.startsWith('-D')),
    ...options,
    ...(standard === undefined ? [] : [`-std=${extensions ? 'gnu' : 'c'}++${standard}`]),
  ];
  return settingsFrom(sources, defines, flags);
}

// ---- comparison ---------------------------------------------------------------------------------

/** One line per setting in which the two builds differ; empty when they build the same addon. */
export function buildDifferences(gyp: BuildSettings, cmake: BuildSettings): string[] {
  const differences: string[] = [];
  for (const key of Object.keys(gyp) as (keyof BuildSettings)[]) {
    const left = JSON.stringify(gyp[key]);
    const right = JSON.stringify(cmake[key]);
    if (left !== right) differences.push(`${key}: binding.gyp ${left}, CMakeLists.txt ${right}`);
  }
  return differences;
}
