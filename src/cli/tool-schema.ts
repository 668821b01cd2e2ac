/**
 * What the shell reads of a tool's JSON Schema: its properties and their types, which property a
 * bare job number fills and which the raw rest of the line fills, and how a property is written as
 * a flag. The parser, the usage lines and completion all read the schema through here.
 */

/** What the shell needs of a tool (a `ToolDefinition` is one). */
export interface ToolLike {
  name: string;
  level: number;
  description: string;
  inputSchema: object;
}

export interface PropertySchema {
  type?: string | readonly string[];
  enum?: readonly unknown[];
  items?: PropertySchema;
  description?: string;
}

interface ObjectSchema {
  properties?: Record<string, PropertySchema>;
  required?: readonly string[];
}

/** The property a bare whole number fills. */
export const ID_PROPERTY = 'id';
/** The property the rest of the line fills, raw (quotes and all, as the shell will see them). */
export const REST_PROPERTY = 'command';

export function propertiesOf(tool: ToolLike): Record<string, PropertySchema> {
  return (tool.inputSchema as ObjectSchema).properties ?? {};
}

export function requiredOf(tool: ToolLike): ReadonlySet<string> {
  return new Set((tool.inputSchema as ObjectSchema).required ?? []);
}

/** The properties written as flags: all but the job number and the raw rest. */
export function flagProperties(tool: ToolLike): string[] {
  return Object.keys(propertiesOf(tool)).filter((name) => name !== ID_PROPERTY && name !== REST_PROPERTY);
}

/** The property's type, `null` aside (`["integer", "null"]` is an integer); an enum without one is a string. */
export function typeOf(property: PropertySchema): string {
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== 'null') : property.type;
  if (typeof type === 'string') return type;
  return property.enum ? 'string' : 'any';
}

/** `max_bytes`, `maxBytes`, `max-bytes` are one name. */
function normalName(name: string): string {
  return name.toLowerCase().replace(/[-_]/g, '');
}

/** The property a flag names, however its words are joined. */
export function findProperty(properties: Record<string, PropertySchema>, name: string): string | undefined {
  const wanted = normalName(name);
  return Object.keys(properties).find((key) => normalName(key) === wanted);
}

/** `--max-bytes`: how a property is written as a flag. */
export function flagName(property: string): string {
  return `--${property.replace(/_/g, '-').replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}`;
}
