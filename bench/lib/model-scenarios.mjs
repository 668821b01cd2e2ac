/**
 * The standard scenarios a model plays (issue 13's closing note, the tokens figure), run through
 * the tools of one build: `runScenarios(distDir)` imports `<distDir>/src/index.js`, so an older
 * build (a checkout of an earlier commit, built) is played exactly as the current one, and their
 * answers can be set side by side (bench/model-answers.mjs).
 *
 * Each scenario is a list of calls with the answer text each got. The jobs print fixed text (no
 * ports, no clocks in their output); only the report headers' elapsed times and resource figures
 * vary from run to run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Tokens as the definitions test counts them: characters / 4, rounded up. */
export function tokens(text) {
  return Math.ceil((typeof text === 'string' ? text : JSON.stringify(text)).length / 4);
}

/** A dev server that says it is ready after a moment and then serves (here: sleeps); run as `sh dev-server.sh`. */
const DEV_SERVER = [
  'sleep 0.3',
  // One write, so the answer (which comes as soon as a line matches) shows the same lines every run.
  "printf '\\n  VITE v5.4.0  ready in 312 ms\\n\\n  ➜  Local:   http://localhost:5173/\\n  ➜  Network: use --host to expose\\n'",
  'exec sleep 600',
].join('; ');

/** A build of 300 lines: progress, one type error at line 150, a warning at 220, then failure; run as `sh build.sh`. */
const FAILING_BUILD = [
  'i=1',
  'while [ $i -le 300 ]; do',
  '  if [ $i -eq 150 ]; then echo "src/app/routes.ts(42,7): error TS2304: Cannot find name \'useLoader\'." >&2',
  '  elif [ $i -eq 220 ]; then echo "warning: src/app/legacy.ts is imported but never used"',
  '  elif [ $i -eq 300 ]; then echo "Build failed with 1 error." >&2',
  '  else echo "compiling module $i/300 src/modules/m$i.ts"; fi',
  '  i=$((i+1))',
  'done',
  'exit 1',
].join('\n');

/** The definitions of the tools in every flavor the build knows (none before flavors existed). */
function definitionsByFlavor(tools) {
  const flavors = ['anthropic', 'openai', 'openai-strict', 'gemini', 'mcp'];
  if (typeof tools.definitions !== 'function') {
    return [{ flavor: 'default (no flavors in this build)', text: JSON.stringify(tools.all.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }))) }];
  }
  return flavors.map((flavor) => ({ flavor, text: JSON.stringify(tools.definitions({ flavor })) }));
}

/** Whether job_status takes `field` in this build. */
function statusTakes(tools, field) {
  return Object.hasOwn(tools.job_status.inputSchema.properties ?? {}, field);
}

/**
 * Plays the scenarios against the build in `distDir`. Resolves with
 * `{ definitions: [{flavor, text}], scenarios: [{name, calls: [{call, input, answer}], raw}] }`,
 * where `raw` is the job output the scenario's last answer is about, as the job printed it (the
 * floor of the tokens figure: what a bare `tail` would hand the model).
 */
export async function runScenarios(distDir) {
  const { JobRuntime, createTools } = await import(pathToFileURL(path.join(path.resolve(distDir), 'src', 'index.js')).href);
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'heph-model-scenarios-'));
  // The scripts sit in the jobs' directory, so each command is as short as a model's `npm run build`.
  fs.writeFileSync(path.join(cwd, 'dev-server.sh'), `${DEV_SERVER}\n`);
  fs.writeFileSync(path.join(cwd, 'build.sh'), `${FAILING_BUILD}\n`);
  const runtime = await JobRuntime.start({ cwd });
  const tools = createTools(runtime, { approve: async () => 'once' });
  const scenarios = [];
  // The MCP server's reads (only what no earlier answer showed); a build without the option
  // ignores it and reads as the default does.
  const newReads = createTools(runtime, { approve: async () => 'once', reads: 'new' });
  const play = async (calls, call, input, by = tools) => {
    const answer = await by[call].run(input);
    calls.push({ call, input, answer });
    return answer;
  };
  try {
    const definitions = definitionsByFlavor(tools);

    {
      const calls = [];
      await play(calls, 'background', { command: 'sh dev-server.sh', wait: 10, until: 'ready in' });
      const id = runtime.list().at(-1).id;
      scenarios.push({ name: 'dev server ready (background with until)', calls, raw: (await runtime.status(id, { lines: 50 })).output.lines.map((line) => line.text).join('\n') });
      await runtime.kill(id, { signal: 'KILL' });
    }

    {
      const calls = [];
      await play(calls, 'background', { command: 'sh build.sh', wait: 30 });
      const id = runtime.list().at(-1).id;
      await play(calls, 'job_status', { id });
      if (statusTakes(tools, 'filter')) await play(calls, 'job_status', { id, filter: 'error|warn' });
      const raw = (await runtime.status(id, { lines: 50 })).output.lines.map((line) => line.text).join('\n');
      scenarios.push({ name: 'failing 300-line build (background, status after exit, status with filter where the build has it)', calls, raw });

      const again = [];
      await play(again, 'job_status', { id });
      scenarios.push({ name: 'a status with nothing new (the same build read again)', calls: again, raw: '' });

      const seen = [];
      await play(seen, 'job_status', { id }, newReads);
      await play(seen, 'job_status', { id }, newReads);
      scenarios.push({ name: "the same with reads: 'new' (the MCP server's mode): read once, then again", calls: seen, raw: '' });
    }
    return { definitions, scenarios };
  } finally {
    await runtime.close();
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}
