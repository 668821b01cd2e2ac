/**
 * Asking the user before a level-2 call: once, always (the exact permission pattern is remembered,
 * no wildcard), or deny. With no approver configured, every such call is refused.
 */
import * as say from '../wording/index.js';
import type { ToolContext } from './context.js';
import { refusal, type ToolResult } from './result.js';

export type ApprovalAnswer = 'once' | 'always' | 'deny';

export interface ApprovalRequest {
  tool: string;
  /** The exact permission pattern, e.g. `background(npm run dev)`. */
  pattern: string;
  input: unknown;
  context: ToolContext;
}

/** Asks the user. "always" makes the tools remember `request.pattern` (that exact string). */
export type Approver = (request: ApprovalRequest) => Promise<ApprovalAnswer>;

/** Resolves with null when the call may run, else with the refusal. */
export type Ask = (tool: string, pattern: string, input: unknown, context: ToolContext) => Promise<ToolResult | null>;

/** The question to the user for one set of tools, remembering what was approved "always". */
export function approvalGate(approve: Approver | undefined): Ask {
  const remembered = new Set<string>();
  return async (tool, pattern, input, context) => {
    if (remembered.has(pattern)) return null;
    if (!approve) return refusal(say.noApprover(tool, pattern));
    let answer: unknown;
    try {
      answer = await approve({ tool, pattern, input, context });
    } catch (error) {
      return refusal(say.approverFailed(tool, pattern, error));
    }
    if (answer === 'always') {
      remembered.add(pattern);
      return null;
    }
    if (answer === 'once') return null;
    if (answer === 'deny') return refusal(say.denied(tool, pattern));
    return refusal(say.badApproverAnswer(tool, pattern, answer));
  };
}
