/**
 * The README's five framework examples, run as written: each block of "## Agent frameworks" is
 * saved inside this checkout (so `heph-jobs` and the frameworks resolve as a user's install would)
 * and run by this Node in a project whose `npm run dev` starts a server. The model is the scripted
 * API of fake-model.mjs on 127.0.0.1, reached through the provider's base URL in the environment:
 * it starts the dev server, waits for its ready line, stops it when the prompt says so, and answers
 * with the line. Checked: what the model read, what the example printed, and that nothing is left
 * (the FIFO every job process holds at EOF; /proc without the run's mark), each seen positive first.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { marked, newOracle, nothingLeft } from '../helpers/adapter-runs.js';
import { startFakeModel } from '../helpers/fake-model.mjs';
import { processesWithEnv, see } from '../helpers/kernel.js';
import { FIXTURES, tempDir } from '../helpers/runtime.js';
import { signalIfSame } from '../helpers/signal.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const [MAJOR, MINOR] = process.versions.node.split('.').map(Number) as [number, number];

interface Example {
  /** The comment that opens its block (`// Vercel AI SDK`). */
  title: string;
  protocol: 'anthropic' | 'responses';
  /** Why this Node cannot run it (the framework's engines field), or null. */
  tooOld: string | null;
  /** Whether its prompt asks the model to stop the server. */
  stops: boolean;
}

const EXAMPLES: Example[] = [
  { title: 'Vercel AI SDK', protocol: 'anthropic', tooOld: MAJOR < 22 ? 'ai 7 needs Node >= 22' : null, stops: true },
  { title: 'Claude Agent SDK', protocol: 'anthropic', tooOld: null, stops: true },
  { title: 'OpenAI Agents SDK', protocol: 'responses', tooOld: null, stops: true },
  { title: 'LangChain', protocol: 'anthropic', tooOld: null, stops: true },
  { title: 'Mastra', protocol: 'anthropic', tooOld: MAJOR < 22 || (MAJOR === 22 && MINOR < 13) ? '@mastra/core needs Node >= 22.13' : null, stops: false },
];

/** The README's code block that opens with `// title`, in the "Agent frameworks" section. */
function exampleCode(title: string): string {
  const start = README.indexOf('\n## Agent frameworks\n');
  const section = README.slice(start, README.indexOf('\n## ', start + 1));
  const blocks = [...section.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1]!);
  const found = blocks.filter((block) => block.startsWith(`// ${title}\n`));
  if (found.length !== 1) throw new Error(`the README's Agent frameworks section has ${found.length} js blocks opening with "// ${title}"`);
  return found[0]!;
}

/** A tool result as the fake model API received it. */
interface Read {
  tool: string;
  read: string;
  isError: boolean;
}

const runs = new Set<string>(); // the example files' directories
const marks: string[] = [];
afterEach(() => {
  // What a failed run left is killed here by the pids its mark names.
  for (const mark of marks.splice(0)) {
    for (const pid of processesWithEnv(`HEPH_TEST_MARK=${mark}`)) {
      try {
        signalIfSame(see(pid), 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
});
afterAll(() => {
  for (const dir of runs) fs.rmSync(dir, { recursive: true, force: true });
});

describe("the README's framework examples, run as written against a scripted model", () => {
  for (const example of EXAMPLES) {
    it.skipIf(example.tooOld !== null)(`${example.title}${example.tooOld ? ` (skipped: ${example.tooOld}, this is ${process.version})` : ''}`, async () => {
      // Beside package.json, so that `heph-jobs` names this checkout.
      const dir = fs.mkdtempSync(path.join(ROOT, '.readme-example-'));
      runs.add(dir);
      const file = path.join(dir, 'example.mjs');
      fs.writeFileSync(file, exampleCode(example.title));

      const oracle = newOracle();
      const project = tempDir();
      const dev = `${oracle.prefix}exec node ${JSON.stringify(path.join(FIXTURES, 'ready-server.mjs'))}`;
      fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'readme-example', private: true, scripts: { dev } }));

      const mark = randomUUID();
      marks.push(mark);
      // At the model's second turn the server runs: the oracles' positive control.
      const whileRunning: { eof: boolean; marked: string[] }[] = [];
      let ready = '';
      const fake = await startFakeModel(example.protocol, ({ results }: { results: Read[] }) => {
        if (results.length === 0) return { call: { name: 'background', args: { command: 'npm run dev', until: 'ready on port' } } };
        const started = results[0]!;
        ready = /ready on port \d+/.exec(started.read)?.[0] ?? '';
        if (results.length === 1) whileRunning.push({ eof: oracle.closed, marked: marked(mark) });
        const id = Number(/job (\d+)/.exec(started.read)?.[1]);
        if (example.stops && results.length === 1) return { call: { name: 'job_kill', args: { id } } };
        return { text: `The dev server said: ${ready}.` };
      });
      try {
        const run = await execa(process.execPath, [file], {
          cwd: project,
          reject: false,
          timeout: 120_000,
          forceKillAfterDelay: 1000,
          env: {
            HOME: project,
            HEPH_TEST_MARK: mark,
            ANTHROPIC_BASE_URL: fake.url,
            ANTHROPIC_API_KEY: 'fake-key',
            OPENAI_BASE_URL: `${fake.url}/v1`,
            OPENAI_API_KEY: 'fake-key',
            OPENAI_AGENTS_DISABLE_TRACING: '1',
            // Claude Code (the Claude Agent SDK runs it): its state in the project, no traffic but the model's.
            CLAUDE_CONFIG_DIR: path.join(project, '.claude'),
            DISABLE_AUTOUPDATER: '1',
            DISABLE_TELEMETRY: '1',
            DISABLE_ERROR_REPORTING: '1',
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          },
        });
        const reads = fake.turns.at(-1)?.results as Read[] | undefined;
        expect({ exitCode: run.exitCode, stderr: run.stderr }).toMatchObject({ exitCode: 0 });
        expect(reads?.map((read) => [read.tool, read.isError])).toEqual(example.stops ? [['background', false], ['job_kill', false]] : [['background', false]]);
        expect(reads![0]!.read).toMatch(/ready on port \d+/);
        if (example.stops) expect(reads![1]!.read).toMatch(/killed/);
        expect(run.stdout).toContain(`The dev server said: ${ready}.`);
        expect(whileRunning).toEqual([{ eof: false, marked: expect.arrayContaining([expect.stringContaining('ready-server.mjs')]) }]);
        await nothingLeft(oracle, mark);
      } finally {
        await fake.close();
      }
    });
  }
});
