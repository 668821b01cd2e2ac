/**
 * The adapter tests' record of what createTools answered: each test file mocks the tools module
 * with `recordingTools` (vi.mock's factory), so every call an adapter makes is kept with its
 * answer, and the test can hold what the framework's model read against it.
 */
import type { ToolDefinition, ToolResult } from '../../src/tools/index.js';

/** One call of a tool createTools made, with the answer it gave. */
export interface Recorded {
  name: string;
  input: unknown;
  result: ToolResult | null;
  signal: AbortSignal | undefined;
}

type ToolsModule = typeof import('../../src/tools/index.js');

/** The tools module `original`, its createTools recording every call into `calls`. */
export function recordingTools(original: ToolsModule, calls: Recorded[]): ToolsModule {
  const recording = (definition: ToolDefinition): ToolDefinition => ({
    ...definition,
    async call(input, context) {
      const entry: Recorded = { name: definition.name, input, result: null, signal: context?.signal };
      calls.push(entry);
      entry.result = await definition.call(input, context);
      return entry.result;
    },
  });
  return {
    ...original,
    createTools: (...args: Parameters<ToolsModule['createTools']>) => {
      const tools = original.createTools(...args);
      return { ...tools, all: tools.all.map(recording) };
    },
  };
}
