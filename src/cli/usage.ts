/**
 * A tool's usage line and one-line summary, written from its JSON Schema and description:
 * `status [ID] [--lines N]`, `background [--locks TEXT]... CMD...`.
 */
import { flagName, flagProperties, ID_PROPERTY, propertiesOf, requiredOf, REST_PROPERTY, typeOf, type PropertySchema, type ToolLike } from './tool-schema.js';

function placeholder(name: string, property: PropertySchema): string {
  if (property.enum && property.enum.length > 0 && property.enum.length <= 6) return property.enum.map(String).join('|');
  switch (typeOf(property)) {
    case 'integer':
    case 'number':
      return 'N';
    case 'boolean':
      return '';
    case 'array':
      return property.items ? placeholder(name, property.items) : 'VALUE';
    case 'object':
      return 'JSON';
    default:
      return name === REST_PROPERTY ? 'CMD' : 'TEXT';
  }
}

/** `status [ID] [--lines N]`, `background [--locks TEXT]... CMD...`, from the schema. */
export function usageOf(tool: ToolLike, word = tool.name): string {
  const properties = propertiesOf(tool);
  const required = requiredOf(tool);
  const parts = [word];
  if (ID_PROPERTY in properties) parts.push(required.has(ID_PROPERTY) ? 'ID' : '[ID]');
  for (const name of flagProperties(tool)) {
    const property = properties[name]!;
    const value = placeholder(name, property);
    const flag = `${flagName(name)}${value ? ` ${value}` : ''}`;
    const repeat = typeOf(property) === 'array' ? '...' : '';
    parts.push(required.has(name) ? `${flag}${repeat}` : `[${flag}]${repeat}`);
  }
  if (REST_PROPERTY in properties) parts.push(required.has(REST_PROPERTY) ? 'CMD...' : '[CMD...]');
  return parts.join(' ');
}

/** The flags a tool accepts, for messages. */
export function flagList(tool: ToolLike): string {
  const names = flagProperties(tool);
  return names.length === 0 ? 'it takes no flags' : `its flags are ${names.map(flagName).join(', ')}`;
}

/** The first sentence of a description, for one-line help. */
export function firstSentence(text: string): string {
  const match = /^[\s\S]*?[.!?](?=\s|$)/.exec(text.trim());
  return (match?.[0] ?? text).replace(/\s+/g, ' ').trim();
}
