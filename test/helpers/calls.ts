/** Small helpers for tests of tool calls that wait: a resource no other test uses, and whether a call has answered yet. */

/** A port resource picked at random, so tests running at once do not share it. */
export function uniquePort(): string {
  return `port:${40_000 + Math.floor(Math.random() * 20_000)}`;
}

/** Whether `call` has answered yet (checked after the answers already due have been delivered). */
export async function settled(call: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  return (await Promise.race([call, new Promise((resolve) => setImmediate(() => resolve(pending)))])) !== pending;
}
