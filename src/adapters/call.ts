/**
 * What every adapter does with a framework's call: the host's cap on a wait checked once, the
 * framework's abort signal and that cap as the call's context, and a fault (a throw: the tools
 * answer every mistake with text) told as an error result, never thrown at the agent's loop.
 */
import type { ToolContext, ToolDefinition, ToolResult } from '../tools/index.js';
import { adapterConfig } from '../wording/index.js';

/** `maxWaitMs` as a host gives it: a whole number of ms, 0 or more, or absent (no cap). */
export function checkMaxWait(maxWaitMs: unknown): number | undefined {
  if (maxWaitMs === undefined) return undefined;
  if (typeof maxWaitMs !== 'number' || !Number.isSafeInteger(maxWaitMs) || maxWaitMs < 0) throw new TypeError(adapterConfig.badMaxWait(maxWaitMs));
  return maxWaitMs;
}

/** The call's context: the framework's signal for it, and the cap. */
export function contextOf(signal: AbortSignal | undefined, maxWaitMs: number | undefined): ToolContext {
  return { ...(signal ? { signal } : {}), ...(maxWaitMs === undefined ? {} : { maxWaitMs }) };
}

/** `definition`'s answer to `input`; a fault is an error result. */
export async function callTool(definition: ToolDefinition, input: unknown, context: ToolContext): Promise<ToolResult> {
  try {
    return await definition.call(input ?? {}, context);
  } catch (error) {
    return { text: adapterConfig.fault(definition.name, error), isError: true };
  }
}
