/**
 * What `heph-jobs mcp` says as a server: its instructions to the client's model, and the JSON-RPC
 * error messages for what it cannot serve. Each error says what was wrong and what is accepted.
 */

/**
 * The server's `instructions`: all a client that defers its tools (Claude Code's tool search)
 * shows the model of them besides their names, so they say what the tools are for and when.
 */
export const INSTRUCTIONS =
  'Background jobs of this session: use these instead of your shell tool for a command that keeps running or that you ' +
  'start now and check on later (a dev server, a watcher). background starts one and answers with its job number and ' +
  'first output (until and until_port wait until it is ready; notify tells you of lines that match later); ' +
  'job_status reads its new output or waits for it; ' +
  'job_input writes to its stdin; job_restart runs it again; job_kill stops it and everything it started. A command ' +
  'whose result you need now stays with the shell tool. Every job is stopped when this session ends.';

const ONE_PER_LINE = 'send one JSON-RPC 2.0 message per line';
const SHOWN_CHARS = 60;

/** A received value as an error shows it: its kind and its JSON, cut short. */
function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  const kind = Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
  const json = JSON.stringify(value);
  return `${kind}, ${json.length > SHOWN_CHARS ? `${json.slice(0, SHOWN_CHARS - 3)}...` : json}`;
}

export const protocolError = {
  tooLarge: (bytes: number, limit: number) =>
    `message of ${bytes} bytes is over the limit of ${limit} bytes, so nothing in it was run; the session goes on. ` +
    'Send less in one call (job_input can write a long text in several calls).',
  notJson: (reason: string) => `the line is not JSON (${reason}); ${ONE_PER_LINE}`,
  batch: () => 'a batch of messages is not served: MCP has no batches since its 2025-06-18 revision, so nothing in it was run; send each message on its own line',
  emptyBatch: () => `an empty array is not a message; ${ONE_PER_LINE}`,
  notAnObject: (value: unknown) => `a message must be a JSON object; received ${shown(value)}; ${ONE_PER_LINE}`,
  version: (value: unknown) => `"jsonrpc" must be "2.0"; received ${shown(value)}`,
  id: (value: unknown) => `"id" must be a string or a number; received ${shown(value)}`,
  method: (value: unknown) => `"method" must be a string; received ${shown(value)}`,
  params: (value: unknown) => `"params" must be an object (MCP names every parameter); received ${shown(value)}`,
  kind: () => 'a message must be a request ("method" and "id"), a notification ("method") or a response ("id" and "result" or "error")',
  shape: (where: string, problem: string) => `not a JSON-RPC 2.0 message: ${where}: ${problem}`,
  toolName: (value: unknown) => `tools/call: "name" must be the tool's name as a string; received ${shown(value)}`,
  toolArguments: (value: unknown) =>
    `tools/call: "arguments" must be an object of the tool's fields, such as {"id": 0}; received ${shown(value)}. Nothing was run.`,
  toolCall: (where: string, problem: string) => `tools/call: ${where}: ${problem}. Nothing was run.`,
};
