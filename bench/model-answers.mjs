#!/usr/bin/env node
/**
 * `node bench/model-answers.mjs [distDir]`: plays the standard model scenarios
 * (lib/model-scenarios.mjs) against a build (default: this checkout's dist/) and prints each
 * call and the answer text it got, with its size in tokens (characters / 4), then the size of the
 * tool definitions per flavor. For before/after: build an older commit in a checkout of its own and
 * run this against its dist/ too.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runScenarios, tokens } from './lib/model-scenarios.mjs';

const distDir = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist'));
const { definitions, scenarios } = await runScenarios(distDir);
const out = [`model answers of ${distDir}`, ''];
for (const scenario of scenarios) {
  out.push(`## ${scenario.name}`, '');
  for (const { call, input, answer } of scenario.calls) {
    out.push(`${call} ${JSON.stringify(input)}  (${tokens(answer)} tokens)`, ...answer.split('\n').map((line) => `    ${line}`), '');
  }
}
out.push('## tool definitions', '');
for (const { flavor, text } of definitions) out.push(`${flavor}: ${tokens(text)} tokens`);
process.stdout.write(`${out.join('\n')}\n`);
