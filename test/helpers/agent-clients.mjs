/**
 * The three agent CLIs people run `heph-jobs mcp` from, pinned, each installed once by its test's
 * setup into a cache folder (CACHE; never a dependency of the package) and run headless against the fake
 * model API of fake-model.mjs, with `heph-jobs mcp` behind mcp-tap.mjs so a test sees both what
 * the server wrote and what the client handed its model. No network, fake keys, a fresh HOME.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeModel } from './fake-model.mjs';

const REPO = path.resolve(import.meta.dirname, '../..');
export const CLI = path.join(REPO, 'dist/src/cli/main.js');
export const TAP = path.join(import.meta.dirname, 'mcp-tap.mjs');
/**
 * Where the clients are installed: HEPH_CLIENTS_CACHE, else $XDG_CACHE_HOME/heph-jobs/clients
 * (~/.cache by default), outside node_modules so that `npm ci` keeps them.
 */
export const CACHE = process.env.HEPH_CLIENTS_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'heph-jobs', 'clients');
/** What each client run showed its model, for the README's figures and the bench (bench/figures/tokens.mjs). */
export const TRANSCRIPTS = path.join(CACHE, 'transcripts');
const INSTALL_TIMEOUT_MS = 5 * 60_000;

const MUSL_TRIPLES = { x64: 'x86_64-unknown-linux-musl', arm64: 'aarch64-unknown-linux-musl' };

/** How `heph-jobs mcp` is started: `{ command, args, env }` (env: only what the test adds). */
function serverEntry(server) {
  return { command: server.command, args: server.args, env: server.env };
}

export const CLIENTS = [
  {
    id: 'claude-code',
    name: 'Claude Code',
    pkg: '@anthropic-ai/claude-code',
    version: '2.1.332',
    protocol: 'anthropic',
    /** The native binary its postinstall puts at bin/claude.exe (the wrapper package's own stub otherwise). */
    executable: (root) => path.join(root, 'node_modules/@anthropic-ai/claude-code/bin/claude.exe'),
    versionArgs: ['--version'],
    prepare({ root, dir, modelUrl, server, toolTimeoutMs }) {
      const config = path.join(dir, 'mcp.json');
      fs.writeFileSync(config, JSON.stringify({ mcpServers: { 'heph-jobs': { type: 'stdio', ...serverEntry(server) } } }));
      return {
        file: this.executable(root),
        // As root (this machine) --dangerously-skip-permissions is refused; allowing the server's
        // tools is what a user does anyway.
        args: ['-p', 'Run the job.', '--mcp-config', config, '--strict-mcp-config', '--allowedTools', 'mcp__heph-jobs', '--output-format', 'stream-json', '--verbose'],
        env: {
          ANTHROPIC_BASE_URL: modelUrl,
          ANTHROPIC_API_KEY: 'sk-ant-fake',
          CLAUDE_CONFIG_DIR: path.join(dir, '.claude'),
          MCP_TOOL_TIMEOUT: String(toolTimeoutMs),
          DISABLE_AUTOUPDATER: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_ERROR_REPORTING: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
      };
    },
    /** The server's text inside what the model read: Claude Code hands it over as it is. */
    unwrap: (read) => read,
  },
  {
    id: 'codex',
    name: 'Codex',
    pkg: '@openai/codex',
    version: '0.171.0',
    protocol: 'responses',
    // The native binary, started directly: its npm wrapper spawns it as a child on Node < 23, and a
    // SIGKILL of the wrapper would leave the real client running.
    executable: (root) => path.join(root, 'node_modules/@openai/codex-linux-' + process.arch, 'vendor', MUSL_TRIPLES[process.arch] ?? 'none', 'bin/codex'),
    versionArgs: ['--version'],
    prepare({ root, dir, modelUrl, server, toolTimeoutMs }) {
      const home = path.join(dir, '.codex');
      fs.mkdirSync(home, { recursive: true });
      const q = JSON.stringify;
      const env = Object.entries(server.env).map(([key, value]) => `${key} = ${q(value)}`).join(', ');
      fs.writeFileSync(path.join(home, 'config.toml'), [
        'model = "gpt-5.5"',
        'model_provider = "fake"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        '[model_providers.fake]',
        'name = "fake"',
        `base_url = ${q(`${modelUrl}/v1`)}`,
        'wire_api = "responses"',
        'env_key = "FAKE_OPENAI_KEY"',
        '[mcp_servers.heph-jobs]',
        `command = ${q(server.command)}`,
        `args = ${q(server.args)}`,
        `env = { ${env} }`,
        `tool_timeout_sec = ${toolTimeoutMs / 1000}`,
        '',
      ].join('\n'));
      return {
        file: this.executable(root),
        args: ['exec', '--skip-git-repo-check', '--json', 'Run the job.'],
        env: { CODEX_HOME: home, FAKE_OPENAI_KEY: 'sk-fake', CODEX_MANAGED_BY_NPM: '1', CODEX_MANAGED_PACKAGE_ROOT: path.join(root, 'node_modules/@openai/codex') },
      };
    },
    /** Codex puts a `Wall time` line and `Output:` before the server's text. */
    unwrap: (read) => /^Wall time: [\d.]+ seconds\nOutput:\n([\s\S]*)$/.exec(read)?.[1] ?? null,
  },
  {
    id: 'gemini-cli',
    name: 'Gemini CLI',
    pkg: '@google/gemini-cli',
    version: '0.61.0',
    protocol: 'gemini',
    executable: (root) => path.join(root, 'node_modules/@google/gemini-cli/bundle/gemini.js'),
    versionArgs: ['--version'],
    node: true,
    prepare({ root, dir, modelUrl, server, toolTimeoutMs }) {
      const home = path.join(dir, '.gemini');
      fs.mkdirSync(home, { recursive: true });
      fs.writeFileSync(path.join(home, 'settings.json'), JSON.stringify({
        security: { auth: { selectedType: 'gemini-api-key' } },
        mcpServers: { 'heph-jobs': { ...serverEntry(server), timeout: toolTimeoutMs, trust: true } },
      }));
      // Headless runs in an untrusted folder drop to the default approval mode: trust this one.
      fs.writeFileSync(path.join(home, 'trustedFolders.json'), JSON.stringify({ [dir]: 'TRUST_FOLDER' }));
      return {
        file: process.execPath,
        args: [this.executable(root), '-p', 'Run the job.', '--approval-mode', 'yolo', '--output-format', 'stream-json'],
        // One process: by default it relaunches itself as a child, and a SIGKILL of the parent
        // would leave the real client running.
        env: { GOOGLE_GEMINI_BASE_URL: modelUrl, GEMINI_API_KEY: 'fake-key', GEMINI_CLI_NO_RELAUNCH: 'true' },
      };
    },
    /** Gemini CLI wraps the server's text in `<untrusted_context>` lines (inside `{"output": ...}`). */
    unwrap: (read) => /^<untrusted_context>\n([\s\S]*)\n<\/untrusted_context>$/.exec(read)?.[1] ?? null,
  },
];

function runsVersion(client, root) {
  const file = client.executable(root);
  if (!fs.existsSync(file)) return `${file} is missing`;
  const [command, args] = client.node ? [process.execPath, [file, ...client.versionArgs]] : [file, client.versionArgs];
  const run = spawnSync(command, args, { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, HOME: os.tmpdir() } });
  if (run.error) return `${command} --version: ${run.error.message}`;
  if (!run.stdout.includes(client.version)) return `${command} --version printed ${JSON.stringify((run.stdout + run.stderr).trim().slice(0, 300))}, not ${client.version}`;
  return null;
}

/**
 * The client installed in the cache (installed now when it is not): `{ root }`, or `{ reason }`
 * saying why it cannot run here. An install goes to a folder of its own, renamed into place when
 * it runs, so two test processes never share a half-installed one.
 */
export function ensureClient(client) {
  const root = path.join(CACHE, `${client.id}-${client.version}`);
  if (runsVersion(client, root) === null) return { root };
  if (process.platform !== 'linux' || !MUSL_TRIPLES[process.arch]) return { reason: `no ${client.name} package for ${process.platform}-${process.arch} here` };
  fs.mkdirSync(CACHE, { recursive: true });
  const staging = fs.mkdtempSync(path.join(CACHE, `.${client.id}-`));
  try {
    const spec = `${client.pkg}@${client.version}`;
    const npm = spawnSync('npm', ['install', '--prefix', staging, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', spec], { encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS });
    if (npm.error || npm.status !== 0) {
      const tail = `${npm.stdout ?? ''}${npm.stderr ?? ''}`.trim().split('\n').slice(-6).join('\n');
      return { reason: `npm install ${spec} failed (${npm.error?.message ?? `exit ${npm.status}`}):\n${tail}` };
    }
    const problem = runsVersion(client, staging);
    if (problem) return { reason: `${spec} installed but does not run: ${problem}` };
    fs.rmSync(root, { recursive: true, force: true });
    fs.renameSync(staging, root);
    return { root };
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** The JSON-RPC tools/call exchanges a tap log holds, in the order they were asked. */
export function readTap(file) {
  const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)) : [];
  const calls = [];
  const byId = new Map();
  for (const { dir, at, line } of lines) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      continue;
    }
    if (dir === 'in' && message.method === 'tools/call') {
      const call = { id: message.id, name: message.params.name, args: message.params.arguments, meta: message.params._meta, askedAt: at, result: null, answeredAt: null };
      calls.push(call);
      byId.set(JSON.stringify(message.id), call);
    }
    if (dir === 'out' && message.id !== undefined && byId.has(JSON.stringify(message.id))) {
      const call = byId.get(JSON.stringify(message.id));
      call.result = message.result ?? { error: message.error };
      call.answeredAt = at;
    }
  }
  return calls.map((call) => ({ ...call, text: call.result?.content?.length === 1 ? call.result.content[0].text : null }));
}

/**
 * Runs `client` against a fresh fake model scripted by `script` (fake-model.mjs), `heph-jobs mcp
 * --containment MODE` behind the tap with `env` added to the server's (HEPH_TEST_MARK included).
 * Returns the run: the child, the fake model, `exited`, the tap's calls, and `dispose()`.
 */
export async function startClient(client, install, { script, mode, serverArgs = [], env = {}, toolTimeoutMs }) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `heph-${client.id}-`)));
  const fake = await startFakeModel(client.protocol, script);
  const tapLog = path.join(dir, 'tap.jsonl');
  const server = { command: process.execPath, args: [TAP, tapLog, process.execPath, CLI, 'mcp', '--containment', mode, ...serverArgs], env };
  const prepared = client.prepare({ root: install.root, dir, modelUrl: fake.url, server, toolTimeoutMs });
  const child = spawn(prepared.file, prepared.args, { cwd: dir, env: { PATH: process.env.PATH, HOME: dir, ...prepared.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return {
    child,
    fake,
    dir,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    calls: () => readTap(tapLog),
    /** What happened, for a failure's message. */
    transcript: () => `${client.name} stdout:\n${stdout.slice(-4000)}\nstderr:\n${stderr.slice(-4000)}\nrequests: ${fake.requests.map((r) => `${r.method} ${r.url}`).join(', ')}`,
    async dispose() {
      await fake.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Records what a run showed its model per call, next to the server's text (TRANSCRIPTS/<client>.json). */
export function recordTranscript(client, calls) {
  fs.mkdirSync(TRANSCRIPTS, { recursive: true });
  const file = path.join(TRANSCRIPTS, `${client.id}.json`);
  fs.writeFileSync(file, `${JSON.stringify({ client: client.name, version: client.version, recorded: new Date().toISOString(), calls }, null, 2)}\n`);
  return file;
}
