/** The `background` tool (level 2): starts a command as a job, holding its rules and locks. */
import { normalizeResources } from '../locks/index.js';
import type { BackgroundInput } from '../runtime/api.js';
import { commandProblem, patternProblem } from '../runtime/input-checks.js';
import { capacityError } from '../runtime/job-record.js';
import { LOCKED_CALL_WAIT_MS } from '../runtime/options.js';
import * as say from '../wording/index.js';
import { unlessAborted } from './context.js';
import type { ToolDefinition } from './definition.js';
import { errorAnswer, refusal } from './result.js';
import { backgroundSchema, type BackgroundToolInput } from './schema.js';
import { seconds, type Toolkit } from './toolkit.js';
import { validate } from './validate.js';
import { toolNotify } from './notify.js';
import { afterCut, askedWaitMs, capWait } from './wait-cap.js';

export function backgroundTool(kit: Toolkit): ToolDefinition {
  const { port } = kit;
  const bg = backgroundSchema(kit.limits);
  return kit.define({
    name: 'background',
    level: 2,
    description: bg.description,
    inputSchema: bg.inputSchema,
    pattern(input) {
      const checked = validate<BackgroundToolInput>(bg.check, input);
      // Past the cap the call is refused before anyone is asked.
      if (!checked.ok || capacityError(port.running(), port.settings.maxJobs)) return null;
      return say.permissionPattern('background', checked.value.command);
    },
    async call(input, callContext) {
      const checked = validate<BackgroundToolInput>(bg.check, input);
      if (!checked.ok) return refusal(say.badInput('background', checked.problem, bg.check));
      const { command, locks: asked, stdin, merge, tty, timeout, wait, until, until_port: untilPort, notify: notifyText } = checked.value;
      const notify = notifyText === undefined ? undefined : toolNotify(notifyText);
      const badPattern = (until === undefined ? null : patternProblem(until)) ?? (notify?.ok === false ? notify.problem : null);
      if (badPattern !== null) return refusal(say.badInput('background', badPattern, bg.check));
      const problem = commandProblem(command);
      if (problem !== null) return refusal(say.refusedInput('background', problem));
      const context = kit.resolve(callContext);
      try {
        const locks = [...kit.ownRules('background', context), ...normalizeResources(asked ?? [])];
        // The runtime enforces the cap; asking its rule first spares the user an approval for nothing.
        const full = capacityError(port.running(), port.settings.maxJobs);
        if (full) throw full;
        const refused = await kit.ask('background', say.permissionPattern('background', command), input, context);
        if (refused !== null) return refused;
        const waitMs = askedWaitMs(wait, until, untilPort);
        const capped = waitMs === undefined ? undefined : capWait(waitMs, context.maxWaitMs);
        const request: BackgroundInput = {
          command,
          ...(stdin === undefined ? {} : { stdin }),
          ...(merge === undefined ? {} : { merge }),
          ...(tty === undefined ? {} : { tty }),
          ...(timeout === undefined ? {} : { timeoutMs: seconds(timeout) }),
          ...(capped === undefined ? {} : { waitMs: capped.waitMs }),
          ...(until === undefined ? {} : { until }),
          ...(untilPort === undefined ? {} : { untilPort }),
          ...(notify?.ok ? { notify: notify.value } : {}),
          cwd: context.cwd,
          env: context.env,
          ...(context.ref === undefined ? {} : { ref: context.ref }),
          ...(locks.length === 0 ? {} : { locks: locks.map(({ resource, mode }) => ({ resource, mode })) }),
          // A locked call answers in time (below a client's timeout), with the job still waiting
          // if its locks are not free by then: it keeps its place, and a notice tells when it starts.
          ...(locks.length === 0 ? {} : { answerWithinMs: capWait(wait === undefined ? LOCKED_CALL_WAIT_MS : seconds(wait), context.maxWaitMs).waitMs }),
        };
        // The runtime names the job before its first await: known now, in case the caller stops
        // waiting (context.signal) while the job waits for its locks. It keeps its place then.
        let queued: number | null = null;
        const started = port.background(request, (id) => (queued = id));
        const id = queued as number | null;
        const told = id !== null && context.onWaiting && kit.findJob(id)?.state === 'waiting' ? kit.tellWaiting(id, context.onWaiting) : null;
        try {
          return kit.jobResult(afterCut(await unlessAborted(started, context.signal, async () => (id === null ? started : (kit.findJob(id) ?? started))), capped));
        } finally {
          if (told) clearTimeout(told);
        }
      } catch (error) {
        return errorAnswer('background', error);
      }
    },
  });
}
