/**
 * Tokens (characters / 4, as test/unit/tool-flavors.test.ts counts them): what the tool
 * definitions cost per request in each flavor, and what the answers of the standard model
 * scenarios (lib/model-scenarios.mjs) cost, so that a wording change shows its price. Floors: the
 * definitions' names and schemas without descriptions, and for an answer the job's own lines as it
 * printed them (what a bare `tail -n 50` would hand a model). And what the model reads in each
 * agent CLI, from the transcripts test/clients/agent-clients.test.ts last recorded (the clients
 * are not run here), against the server's text of the same call.
 */
import fs from 'node:fs';
import path from 'node:path';
import { TRANSCRIPTS } from '../../test/helpers/agent-clients.mjs';
import { BENCH_DIR } from '../lib/context.mjs';
import { runScenarios, tokens } from '../lib/model-scenarios.mjs';
import { goal, group, ratioOf, row } from '../lib/report.mjs';

export const id = 'tokens';
export const title = 'tokens: tool definitions per flavor and the answers of the standard scenarios';

const DEFINITIONS_LIMIT = 1000;
const BARE = 'names and schemas, no descriptions';
const RAW = "the job's lines as printed";
const SERVER_TEXT = "the server's text";

/** The recorded client transcripts (agent-clients.mjs recordTranscript), by file name. */
function clientTranscripts() {
  if (!fs.existsSync(TRANSCRIPTS)) return [];
  return fs.readdirSync(TRANSCRIPTS).filter((name) => name.endsWith('.json')).sort().map((name) => JSON.parse(fs.readFileSync(path.join(TRANSCRIPTS, name), 'utf8')));
}

/** The definitions with every description taken out (the floor of their wording). */
function withoutDescriptions(value) {
  if (Array.isArray(value)) return value.map(withoutDescriptions);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => key !== 'description').map(([key, inner]) => [key, withoutDescriptions(inner)]));
}

export async function run() {
  const { definitions, scenarios } = await runScenarios(path.join(BENCH_DIR, '..', 'dist'));
  const groups = [];
  const goals = [];
  const units = { unit: 'tokens' };
  for (const { flavor, text } of definitions) {
    const g = group(`definitions, ${flavor}`, [
      row('the five tool definitions', [tokens(text)], { ...units, ours: true }),
      row(BARE, [tokens(withoutDescriptions(JSON.parse(text)))], units),
    ], 'size');
    groups.push(g);
    goals.push(goal(`definitions, ${flavor}: ≤ ${DEFINITIONS_LIMIT} tokens`, g.rows[0].median, '<=', DEFINITIONS_LIMIT, (value) => `${value} tokens`));
  }
  for (const scenario of scenarios) {
    for (const [index, { call, input, answer }] of scenario.calls.entries()) {
      const rows = [row(`${call} ${JSON.stringify(input)}`, [tokens(answer)], { ...units, ours: true })];
      if (scenario.raw) rows.push(row(RAW, [tokens(scenario.raw)], units));
      groups.push(group(`${scenario.name}${scenario.calls.length > 1 ? `, call ${index + 1}` : ''}`, rows, 'size'));
    }
  }
  const transcripts = clientTranscripts();
  for (const transcript of transcripts) {
    for (const { tool, read, server } of transcript.calls) {
      groups.push(group(`what the model reads in ${transcript.client} ${transcript.version}, ${tool}`, [
        row(`${transcript.client} hands its model`, [tokens(read)], { ...units, ours: true }),
        row(SERVER_TEXT, [tokens(server)], units),
      ], 'size'));
    }
  }
  const definitionRatios = groups.slice(0, definitions.length).map((g) => ratioOf(g, BARE).toFixed(2));
  return {
    groups,
    goals,
    notes: [
      `descriptions multiply the definitions' size by ${definitionRatios.join(', ')} (per flavor, in the order above)`,
      transcripts.length === 0
        ? 'what the agent CLIs hand their model: no transcript recorded yet (`npx vitest run test/clients` records them)'
        : `what the agent CLIs hand their model: from the transcripts recorded ${transcripts.map((t) => `${t.client} ${t.recorded}`).join(', ')}`,
      'answers: the report headers carry elapsed times and resource figures, so a count may move by a token from run to run; `node bench/model-answers.mjs [distDir]` prints the texts',
    ],
  };
}
