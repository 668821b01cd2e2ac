/**
 * A tool call's time under an MCP client's request timeout. The SDK client gives a request 60 s
 * and fails it then, while a `wait` may ask for 600 s. So:
 * - a request with a progress token (`_meta.progressToken`) waits as long as it asked, and a
 *   progress notification goes out every third of the cap (a client with resetTimeoutOnProgress
 *   starts its timeout again on each);
 * - a request without one has its `wait` cut to the cap (50 s by default, or
 *   HEPH_JOBS_MCP_WAIT_CAP_MS: the tools' `maxWaitMs`, whose answer says so and names the call
 *   that waits on), and whatever else would keep it longer (its locks) is given up a little
 *   later, with the job as it is then.
 * Either way the client's cancellation stops the call's waiting (the job runs on).
 */
import type { ToolContext, ToolResult } from '../tools/index.js';

/** Below the SDK client's default request timeout (60 s), with room for the answer to travel. */
export const DEFAULT_WAIT_CAP_MS = 50_000;
/** What a call without a progress token may take beyond its cut wait before it is given up. */
const GIVE_UP_AFTER_CAP_MS = 5_000;

/** The cap from HEPH_JOBS_MCP_WAIT_CAP_MS (milliseconds, 100 to 600000); the default otherwise. */
export function waitCapFromEnv(env: NodeJS.ProcessEnv): number {
  const raw = env.HEPH_JOBS_MCP_WAIT_CAP_MS?.trim();
  const value = raw === undefined || !/^\d+$/.test(raw) ? NaN : Number(raw);
  return value >= 100 && value <= 600_000 ? value : DEFAULT_WAIT_CAP_MS;
}

/** What the MCP server knows of one request. */
export interface McpCall {
  progressToken: string | number | undefined;
  /** The client cancelled the request. */
  signal: AbortSignal;
  /** Sends a progress notification whose message is `message(elapsedMs)`. */
  progress(progressToken: string | number, progress: number, elapsedMs: number): Promise<void>;
}

/** Runs `run` within the client's timeout (see the module comment). */
export async function withinTimeout(call: McpCall, capMs: number, run: (context: ToolContext) => Promise<ToolResult>): Promise<ToolResult> {
  const token = call.progressToken;
  if (token === undefined) {
    const giveUp = AbortSignal.timeout(capMs + GIVE_UP_AFTER_CAP_MS);
    return run({ signal: AbortSignal.any([call.signal, giveUp]), maxWaitMs: capMs });
  }
  const started = Date.now();
  let sent = 0;
  const timer = setInterval(() => {
    sent += 1;
    call.progress(token, sent, Date.now() - started).catch(() => undefined);
  }, Math.max(50, Math.floor(capMs / 3)));
  try {
    return await run({ signal: call.signal });
  } finally {
    clearInterval(timer);
  }
}
