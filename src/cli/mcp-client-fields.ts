/**
 * Fields an MCP client adds to every tool's input schema for its own use, with the client that adds
 * each: a call's arguments lose them before the tool validates its input (which refuses a field it
 * does not know), unless the tool declares a field of that name itself. A field a model made up is
 * not here and still gets the tool's refusal. Claude Code (2.1.332) and Codex (0.171.0) add none
 * to an MCP tool (Codex rewrites only the file fields of its own Apps' tools).
 */

export interface ClientField {
  field: string;
  client: string;
  /** What the client does with it. */
  use: string;
}

export const CLIENT_FIELDS: readonly ClientField[] = [
  {
    field: 'wait_for_previous',
    client: 'Gemini CLI (0.61.0: addWaitForPreviousParameter in its base tool class; its prompt tells the model to set it)',
    use: 'runs the call after the calls before it in the same turn instead of in parallel',
  },
];

/** `args` without the client fields `declared` (the tool's own properties) does not name. */
export function withoutClientFields(args: Record<string, unknown>, declared: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const own = (field: string) => Object.prototype.hasOwnProperty.call(declared, field);
  const added = CLIENT_FIELDS.filter(({ field }) => !own(field) && Object.prototype.hasOwnProperty.call(args, field));
  if (added.length === 0) return args;
  const rest = { ...args };
  for (const { field } of added) delete rest[field];
  return rest;
}
