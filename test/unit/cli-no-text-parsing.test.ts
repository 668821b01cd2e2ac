/**
 * The shell and the MCP server read a tool's result fields (`isError`, `job`, `list`); none of
 * src/cli/ reads meaning back out of the answer's text (issue 11). The check greps the sources for
 * the forms that parsing took, and a negative control runs it on code that does parse, so a check
 * that cannot fail is caught too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CLI_DIR = fileURLToPath(new URL('../../src/cli/', import.meta.url));

/** String methods that look inside a text. */
const INSPECT = '(?:match|matchAll|test|exec|search|startsWith|endsWith|includes|indexOf|lastIndexOf|split|replace|replaceAll|slice|substring|trim)';

/** Forms that parse wherever they appear. */
const RULES: readonly { rule: string; pattern: RegExp }[] = [
  { rule: 'guesses refusals from the text', pattern: /\blooksRefused\b/ },
  { rule: 'matches the text to reports', pattern: /\bclassify\s*\(/ },
  { rule: 'records the runtime behind the tools', pattern: /\brecordingRuntime\b|\bnew\s+Proxy\b/ },
  { rule: 'takes the text-only answer', pattern: /\.run\s*\(|\.userKill\s*\(/ },
  { rule: 'inspects an answer text', pattern: new RegExp(`\\.text\\s*[!?]?\\.\\s*${INSPECT}\\s*\\(`) },
  { rule: 'applies a regex to an answer text', pattern: /\.(?:test|exec)\s*\([^)]*\.text\b/ },
];

/** Names bound to a tool's answer: `const text = await tool.run(...)`, `{ text } = await tool.call(...)`, `result: ToolResult`. */
function answerNames(source: string): Set<string> {
  const names = new Set<string>();
  const call = String.raw`=\s*await\s+[\w.$[\]'"]+\.(?:run|call|userKill\w*)\s*\(`;
  for (const match of source.matchAll(new RegExp(String.raw`\b(?:const|let|var)\s+([\w$]+)\s*${call}`, 'g'))) names.add(match[1]!);
  for (const match of source.matchAll(new RegExp(String.raw`\b(?:const|let|var)\s+\{([^}]*)\}\s*${call}`, 'g'))) {
    for (const part of match[1]!.split(',')) {
      const local = part.split(':').at(-1)!.trim();
      if (local !== '') names.add(local);
    }
  }
  for (const match of source.matchAll(/\b([\w$]+)\s*\??:\s*ToolResult\b/g)) names.add(match[1]!);
  return names;
}

function escape(name: string): string {
  return name.replace(/[$]/g, '\\$&');
}

/** Each place `source` parses a tool's answer text: `line N: what it does: the line`. */
function textParsing(source: string): string[] {
  const rules = [...RULES];
  for (const name of answerNames(source)) {
    const n = escape(name);
    rules.push(
      { rule: `inspects the answer ${name}`, pattern: new RegExp(String.raw`\b${n}\s*[!?]?\.\s*(?:text\s*[!?]?\.\s*)?${INSPECT}\s*\(`) },
      { rule: `applies a regex to the answer ${name}`, pattern: new RegExp(String.raw`\.(?:test|exec|match)\s*\(\s*${n}\b`) },
    );
  }
  const found: string[] = [];
  source.split('\n').forEach((line, index) => {
    for (const { rule, pattern } of rules) if (pattern.test(line)) found.push(`line ${index + 1}: ${rule}: ${line.trim()}`);
  });
  return found;
}

describe('src/cli/ reads tool results, never their text', () => {
  it('no file of src/cli/ parses a tool answer', () => {
    const files = fs.readdirSync(CLI_DIR).filter((name) => name.endsWith('.ts'));
    // The shell, the MCP server and the binary are among them (an empty glob would prove nothing).
    expect(files).toEqual(expect.arrayContaining(['shell.ts', 'mcp.ts', 'main.ts']));
    const found = files.flatMap((name) => textParsing(fs.readFileSync(path.join(CLI_DIR, name), 'utf8')).map((where) => `${name} ${where}`));
    expect(found).toEqual([]);
  });

  it('negative control: the check finds each way the CLI used to parse answers', () => {
    // src/cli/main.ts before: a regex told a started job from a refusal.
    const watchNotes = [
      'const text = await tools.background.run({ command });',
      "if (!/^job \\d+ /.test(text)) notes.push(text.split('\\n')[0]!);",
    ].join('\n');
    expect(textParsing(watchNotes)).toEqual([
      expect.stringMatching(/^line 1: takes the text-only answer: /),
      expect.stringMatching(/^line 2: inspects the answer text: /),
      expect.stringMatching(/^line 2: applies a regex to the answer text: /),
    ]);
    // src/cli/mcp.ts before: isError guessed from how the text starts.
    expect(textParsing('...(looksRefused(tool.name, text) ? { isError: true } : {})')).toEqual([expect.stringMatching(/guesses refusals from the text/)]);
    // src/cli/answer.ts before: a Proxy recorded the runtime's reports and matched them to the text.
    expect(textParsing('const runtime = new Proxy(target, {')).toEqual([expect.stringMatching(/records the runtime behind the tools/)]);
    expect(textParsing('const recorder = recordingRuntime(runtime);')).toEqual([expect.stringMatching(/records the runtime behind the tools/)]);
    expect(textParsing('const result = classify(tool, text, recorder.take(), maxJobs);')).toEqual([expect.stringMatching(/matches the text to reports/)]);
    // The same ideas over the structured call.
    expect(textParsing("if (result.text.startsWith('background is refused')) refused = true;")).toEqual([expect.stringMatching(/inspects an answer text/)]);
    expect(textParsing('const refused = /^job_status:/.test(answer.text);')).toEqual([expect.stringMatching(/applies a regex to an answer text/)]);
    expect(textParsing("const { text } = await tool.call(input);\nconst refused = text.startsWith('job_kill:');")).toEqual([
      expect.stringMatching(/^line 2: inspects the answer text: /),
    ]);
    expect(textParsing('function emit(result: ToolResult) {\n  const lines = result.text.split("\\n");\n}')).toEqual([
      expect.stringMatching(/^line 2: inspects an answer text: /),
      expect.stringMatching(/^line 2: inspects the answer result: /),
    ]);
  });

  it('reading the fields of a result passes the check', () => {
    const reading = [
      'const result = await tool.call(parsed.input);',
      'emit({ refused: result.isError, text: result.text, ...(result.job ? { job: result.job } : {}) });',
      "return { content: [{ type: 'text', text: result.text }], ...(result.isError ? { isError: true } : {}) };",
    ].join('\n');
    expect(textParsing(reading)).toEqual([]);
  });
});
