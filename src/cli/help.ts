/**
 * The shell's `help`: the list of commands (each tool's usage line and first sentence, then the
 * shell's own commands), and one command in full (usage, whether it asks, its description and
 * what each of its properties means).
 */
import { shortWord } from './command-table.js';
import { ID_PROPERTY, propertiesOf, REST_PROPERTY, type ToolLike } from './tool-schema.js';
import { firstSentence, usageOf } from './usage.js';

const BUILTIN_HELP: Record<string, { usage: string; text: string }> = {
  '/job-kill': {
    usage: '/job-kill ID',
    text: 'Stop job ID and everything it started, at once and without asking: your own cancellation (it never waits for a lock). Runs even while another command is still busy.',
  },
  logs: {
    usage: 'logs [-f] ID',
    text: "Job ID's output as it wrote it: every line still kept (stderr lines on stderr, red on a terminal). With -f (--follow), then each new line as it comes, until the job ends; Ctrl-C stops following.",
  },
  watch: {
    usage: 'watch',
    text: 'A live table of the jobs (state, elapsed, processes, memory, CPU time, ports, last line), redrawn twice a second. ↑/↓ select a job, Enter follows its output (any key returns), k stops it (after asking), q returns to the prompt.',
  },
  help: { usage: 'help [COMMAND]', text: 'This list, or one command in full.' },
  quit: { usage: 'quit', text: 'End the session: every job is stopped, with everything it started (Ctrl-D and the end of the input do the same).' },
};

/** `help` (every command, one line each) or `help COMMAND` (one in full); null for no such command. */
export function helpText(topic: string, table: Map<string, ToolLike>): string | null {
  if (topic === '') {
    const rows: [string, string][] = [];
    const seen = new Set<ToolLike>();
    for (const tool of table.values()) {
      if (seen.has(tool)) continue;
      seen.add(tool);
      rows.push([usageOf(tool, shortWord(tool, table)), firstSentence(tool.description)]);
    }
    for (const name of ['/job-kill', 'logs', 'watch', 'help', 'quit']) rows.push([BUILTIN_HELP[name]!.usage, firstSentence(BUILTIN_HELP[name]!.text)]);
    const asking = [...seen].filter((tool) => tool.level > 0).map((tool) => shortWord(tool, table));
    return [
      'Commands:',
      ...rows.flatMap(([usage, text]) => [`  ${usage}`, `      ${text}`]),
      '',
      'Each tool also answers to its own name, with flags or with a JSON object as the reports write it:',
      '  job_status {"id": 0, "lines": 100}',
      `${asking.join(', ')} ask first: press y (yes), n (no) or a (always: that exact action, for the rest of the session).`,
      'Ctrl-C stops a command that waits (the job runs on, or keeps its place). help COMMAND shows a command in full.',
      'quit or Ctrl-D ends the session and every job.',
    ].join('\n');
  }
  const builtin = BUILTIN_HELP[topic === 'exit' ? 'quit' : topic];
  if (builtin) return `${builtin.usage}\n${builtin.text}`;
  const tool = table.get(topic);
  if (!tool) return null;
  const lines = [
    usageOf(tool, shortWord(tool, table)),
    `(the tool ${tool.name}; ${tool.level === 0 ? 'runs without asking' : 'asks first: [y]es / [n]o / [a]lways'})`,
    '',
    tool.description,
  ];
  const properties = Object.entries(propertiesOf(tool));
  if (properties.length > 0) {
    lines.push('');
    for (const [name, property] of properties) {
      const shown = name === ID_PROPERTY ? 'ID' : name === REST_PROPERTY ? 'CMD...' : `--${name.replace(/_/g, '-')}`;
      lines.push(`  ${shown}: ${property.description ?? ''}`.trimEnd());
    }
  }
  return lines.join('\n');
}
