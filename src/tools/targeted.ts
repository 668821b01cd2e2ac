/**
 * The tools that act on one job (level 2): `job_kill`, `job_input` and `job_restart`, each made by
 * targetedTool, which gives them job_kill's rules (SPEC 6).
 */
import type { JobReport } from '../reports/report.js';
import { LOCKED_CALL_WAIT_MS } from '../runtime/options.js';
import * as say from '../wording/index.js';
import type { ToolDefinition } from './definition.js';
import { errorAnswer, refusal, type ToolResult } from './result.js';
import {
  jobInputSchema,
  jobKillSchema,
  jobRestartSchema,
  type JobInputToolInput,
  type JobKillToolInput,
  type JobRestartToolInput,
  type ToolSchema,
} from './schema.js';
import { seconds, type Toolkit } from './toolkit.js';
import { validate } from './validate.js';

/** Ended and cleaned up: a kill or an input has nothing to act on, so nobody is asked. */
function hasEnded(target: JobReport): boolean {
  return target.cleanedUp && target.state !== 'running' && target.state !== 'waiting';
}

/**
 * A level-2 tool aimed at one job. Like job_kill (SPEC 6): it never takes its target's
 * resources, fails at once when its own rules overlap them, asks the user (unless the target has
 * ended and there is nothing to act on), and only then holds its own rules around the action.
 */
function targetedTool<I extends { id: number }>(
  kit: Toolkit,
  name: string,
  schema: ToolSchema,
  action: (input: I) => Promise<ToolResult>,
  askWhenEnded: boolean,
  subject: (target: JobReport, input: I) => string = (target) => target.command,
): ToolDefinition {
  return kit.define({
    name,
    level: 2,
    description: schema.description,
    inputSchema: schema.inputSchema,
    pattern(input) {
      const checked = validate<I>(schema.check, input);
      if (!checked.ok) return null;
      const target = kit.findJob(checked.value.id);
      return target && (askWhenEnded || !hasEnded(target)) ? say.permissionPattern(name, subject(target, checked.value)) : null;
    },
    async call(input, callContext) {
      const checked = validate<I>(schema.check, input);
      if (!checked.ok) return refusal(say.badInput(name, checked.problem, schema.check));
      const { id } = checked.value;
      const context = kit.resolve(callContext);
      try {
        const target = kit.findJob(id);
        if (!target) throw kit.notFound(id);
        const own = kit.ownRules(name, context);
        // Fail at once on an overlap, before the user is asked anything.
        const refused = kit.selfConflict(name, own, [target]);
        if (refused !== null) return refused;
        if (askWhenEnded || !hasEnded(target)) {
          const denied = await kit.ask(name, say.permissionPattern(name, subject(target, checked.value)), input, context);
          if (denied !== null) return denied;
        }
        // The rules are taken after the question, so no lock is held while the user thinks.
        return await kit.withOwnLocks(name, say.callLabel(name, id), own, context, () => [target], () => action(checked.value));
      } catch (error) {
        return errorAnswer(name, error);
      }
    },
  });
}

/** job_kill, job_input and job_restart over `kit`. */
export function targetedTools(kit: Toolkit): { job_kill: ToolDefinition; job_input: ToolDefinition; job_restart: ToolDefinition } {
  const { port } = kit;
  const job_kill = targetedTool<JobKillToolInput>(
    kit,
    'job_kill',
    jobKillSchema(),
    async ({ id, signal, grace }) =>
      kit.jobResult(await port.kill(id, { ...(signal ? { signal } : {}), ...(grace === undefined ? {} : { graceMs: seconds(grace) }) })),
    false,
  );

  // The pattern names the text as well as the target: "always" approves writing that text to a
  // job of that command, never other text (an approval must not cover what the person did not see).
  const job_input = targetedTool<JobInputToolInput>(
    kit,
    'job_input',
    jobInputSchema(),
    async ({ id, text, close }) => kit.jobResult(await port.input(id, { ...(text === undefined ? {} : { text }), close: close === true })),
    false,
    (target, { text, close }) => say.inputSubject(target.command, text ?? '', close === true),
  );

  const job_restart = targetedTool<JobRestartToolInput>(
    kit,
    'job_restart',
    jobRestartSchema(),
    async ({ id }) => {
      // A locked job answers in time, as background does (the new job keeps its place).
      const { stopped, started: report } = await port.restart(id, { answerWithinMs: LOCKED_CALL_WAIT_MS });
      const started = kit.shown.present(report);
      return { text: `${stopped.header}\n${started.text}`, isError: false, job: started, stopped };
    },
    true,
  );

  return { job_kill, job_input, job_restart };
}
