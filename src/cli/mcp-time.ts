/**
 * A tool call's time under its MCP client's timeout. A `wait` may ask for 600 s, and no client the
 * README names restarts its timeout when progress arrives, so every call's wait is cut to a cap
 * below the client's timeout (the tools' `maxWaitMs`: the answer says so and names the call that
 * waits on), and whatever else would keep it longer (its locks) is given up a little later, with
 * the job as it is then. A request with a progress token (`_meta.progressToken`) also gets a
 * progress notification every third of the cap, at most PROGRESS_EVERY_MS apart. The client's
 * cancellation, or the session's end, stops the call's waiting (the job runs on).
 */
import type { ToolContext, ToolResult } from '../tools/index.js';

/**
 * The cap of a call with a progress token: below the shortest default tool-call timeout of the
 * clients the README names (Codex's and Cursor's 300 s; README "MCP server" lists each client's).
 */
export const DEFAULT_WAIT_CAP_MS = 240_000;
/**
 * The cap of a call without one: such a call most likely comes from a client on the SDK's defaults
 * (DEFAULT_REQUEST_TIMEOUT_MSEC, 60 s), with room for the answer to travel.
 */
export const DEFAULT_TOKENLESS_WAIT_CAP_MS = 50_000;
export const MIN_WAIT_CAP_MS = 100;
export const MAX_WAIT_CAP_MS = 600_000;
/** What a call may take beyond its cut wait before it is given up. */
const GIVE_UP_AFTER_CAP_MS = 5_000;
/** Often enough for a client that restarts the SDK's 60 s timeout on progress (resetTimeoutOnProgress). */
const PROGRESS_EVERY_MS = 15_000;

/** The cap of each kind of call, in ms. */
export interface WaitCaps {
  withToken: number;
  withoutToken: number;
}

/** `configured` (HEPH_JOBS_MCP_WAIT_CAP_MS or --wait-cap) for every call, else the defaults. */
export function waitCaps(configured?: number): WaitCaps {
  return configured === undefined ? { withToken: DEFAULT_WAIT_CAP_MS, withoutToken: DEFAULT_TOKENLESS_WAIT_CAP_MS } : { withToken: configured, withoutToken: configured };
}

/** A cap in ms from its text: a whole number from MIN_WAIT_CAP_MS to MAX_WAIT_CAP_MS, or null. */
export function parseWaitCap(text: string): number | null {
  const trimmed = text.trim();
  if (!/^\d{1,9}$/.test(trimmed)) return null;
  const value = Number(trimmed);
  return value >= MIN_WAIT_CAP_MS && value <= MAX_WAIT_CAP_MS ? value : null;
}

/** HEPH_JOBS_MCP_WAIT_CAP_MS: none, a cap, or why it cannot be one. */
export function waitCapFromEnv(env: NodeJS.ProcessEnv): { capMs?: number } | { problem: string } {
  const raw = env.HEPH_JOBS_MCP_WAIT_CAP_MS;
  if (raw === undefined || raw.trim() === '') return {};
  const capMs = parseWaitCap(raw);
  return capMs === null ? { problem: `HEPH_JOBS_MCP_WAIT_CAP_MS ${waitCapRule(raw)}` } : { capMs };
}

/** The rule a cap's text breaks, with the text (for --wait-cap and the variable alike). */
export function waitCapRule(raw: string): string {
  return `must be a whole number of milliseconds from ${MIN_WAIT_CAP_MS} to ${MAX_WAIT_CAP_MS}; received ${JSON.stringify(raw)}`;
}

/** What the MCP server knows of one request. */
export interface McpCall {
  progressToken: string | number | undefined;
  /** The client cancelled the request, or the session is ending. */
  signal: AbortSignal;
  /** Sends a progress notification whose message is `message(elapsedMs)`. */
  progress(progressToken: string | number, progress: number, elapsedMs: number): Promise<void>;
}

/** Runs `run` within the client's timeout (see the module comment). */
export async function withinTimeout(call: McpCall, caps: WaitCaps, run: (context: ToolContext) => Promise<ToolResult>): Promise<ToolResult> {
  const token = call.progressToken;
  const capMs = token === undefined ? caps.withoutToken : caps.withToken;
  const context = { signal: AbortSignal.any([call.signal, AbortSignal.timeout(capMs + GIVE_UP_AFTER_CAP_MS)]), maxWaitMs: capMs };
  if (token === undefined) return run(context);
  const started = Date.now();
  let sent = 0;
  const timer = setInterval(() => {
    sent += 1;
    call.progress(token, sent, Date.now() - started).catch(() => undefined);
  }, Math.max(50, Math.min(PROGRESS_EVERY_MS, Math.floor(capMs / 3))));
  try {
    return await run(context);
  } finally {
    clearInterval(timer);
  }
}
