/** A tool's `notify` field: `port:N` asks for a listening port, anything else is an RE2 pattern. */
import type { Notify } from '../runtime/notify.js';
import { patternProblem } from '../runtime/input-checks.js';
import { notifyProblem } from '../wording/index.js';

/** The watch `text` asks for, or the problem with it. */
export function toolNotify(text: string): { ok: true; value: Notify } | { ok: false; problem: string } {
  const port = /^port:(\d+)$/.exec(text);
  if (port) {
    const number = Number(port[1]);
    return number >= 1 && number <= 65_535 ? { ok: true, value: { port: number } } : { ok: false, problem: notifyProblem.badToolPort(text) };
  }
  const problem = patternProblem(text, 'notify');
  return problem === null ? { ok: true, value: { pattern: text } } : { ok: false, problem };
}
