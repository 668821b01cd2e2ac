/**
 * Tab completion for the shell, in readline's completer contract: command words first; then job
 * numbers where a job id goes, and flag names after `--`.
 */
import { BUILTINS } from './command-table.js';
import { parseToolInput } from './parse-input.js';
import { splitCommand } from './tokenize.js';
import { flagName, flagProperties, ID_PROPERTY, propertiesOf, REST_PROPERTY, type ToolLike } from './tool-schema.js';

/** Readline's completer: the candidates for the word under the cursor, and that word. */
export function complete(line: string, table: Map<string, ToolLike>, jobIds: readonly number[]): [string[], string] {
  const [hits, current] = candidates(line, table, jobIds);
  // One candidate: complete the word and the space after it, as bash does.
  return [hits.length === 1 ? [`${hits[0]} `] : hits, current];
}

function candidates(line: string, table: Map<string, ToolLike>, jobIds: readonly number[]): [string[], string] {
  const words = [...BUILTINS, ...table.keys()].sort();
  if (!/\s/.test(line.replace(/^\s+/, ''))) {
    const partial = line.trimStart();
    return [words.filter((word) => word.startsWith(partial)), partial];
  }
  const { word, rest } = splitCommand(line);
  const current = /(\S*)$/.exec(line)?.[1] ?? '';
  const before = rest.slice(0, rest.length - current.length);
  const ids = jobIds.map(String);
  if (word === 'help') return [words.filter((w) => w.startsWith(current)), current];
  if (word === '/job-kill') return before.trim() === '' ? [ids.filter((id) => id.startsWith(current)), current] : [[], current];
  if (word === 'logs') return [[...(current.startsWith('-') ? ['-f', '--follow'] : ids)].filter((option) => option.startsWith(current)), current];
  const tool = table.get(word);
  if (!tool) return [[], current];
  const properties = propertiesOf(tool);
  if (current.startsWith('-')) {
    const flags = flagProperties(tool).map(flagName);
    return [flags.filter((flag) => flag.startsWith(current)), current];
  }
  // A job number goes where no positional has been given yet (flags and their values aside).
  if (ID_PROPERTY in properties && !(REST_PROPERTY in properties)) {
    const parsed = parseToolInput(tool, before, word);
    if (parsed.ok && parsed.input[ID_PROPERTY] === undefined) return [ids.filter((id) => id.startsWith(current)), current];
  }
  return [[], current];
}
