/**
 * Which word runs which command: every tool under its own name and, where that word is free, its
 * name without `job_` (`status`, `kill`, `input`); besides them, the shell's own commands.
 */
import type { ToolLike } from './tool-schema.js';

/** The shell's own commands, besides the tools. */
export const BUILTINS = ['help', 'logs', 'watch', 'quit', 'exit', '/job-kill'] as const;

/** The command words for `tools`: each tool's name, and the name without `job_` where that is free. */
export function commandTable<T extends ToolLike>(tools: readonly T[]): Map<string, T> {
  const table = new Map<string, T>();
  for (const tool of tools) table.set(tool.name, tool);
  const taken = new Set<string>([...BUILTINS, ...table.keys()]);
  for (const tool of tools) {
    if (!tool.name.startsWith('job_')) continue;
    const alias = tool.name.slice(4);
    if (alias.length > 0 && !taken.has(alias)) {
      table.set(alias, tool);
      taken.add(alias);
    }
  }
  return table;
}

/** The word a person types for `tool` (the short alias when it has one). */
export function shortWord(tool: ToolLike, table: Map<string, ToolLike>): string {
  for (const [word, entry] of table) if (entry === tool && word !== tool.name) return word;
  return tool.name;
}
