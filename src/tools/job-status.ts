/** The `job_status` tool (level 0): one job's state and output (or a wait on it), or the list of jobs. */
import { buildListReport } from '../reports/report.js';
import { patternProblem } from '../runtime/input-checks.js';
import * as say from '../wording/index.js';
import { unlessAborted } from './context.js';
import type { ToolDefinition } from './definition.js';
import { errorAnswer, listResult, refusal } from './result.js';
import { jobStatusSchema, type JobStatusToolInput } from './schema.js';
import type { Toolkit } from './toolkit.js';
import { validate } from './validate.js';
import { toolNotify } from './notify.js';
import { afterCut, askedWaitMs, capWait } from './wait-cap.js';

export function jobStatusTool(kit: Toolkit): ToolDefinition {
  const { port } = kit;
  const st = jobStatusSchema(kit.limits);
  return kit.define({
    name: 'job_status',
    level: 0,
    description: st.description,
    inputSchema: st.inputSchema,
    pattern() {
      return null;
    },
    async call(input, callContext) {
      const checked = validate<JobStatusToolInput>(st.check, input ?? {});
      if (!checked.ok) return refusal(say.badInput('job_status', checked.problem, st.check));
      const { id, lines, since, max_bytes: maxBytes, wait, until, until_port: untilPort, filter, notify: notifyText } = checked.value;
      const notify = notifyText === undefined ? undefined : toolNotify(notifyText);
      const badPattern =
        (until === undefined ? null : patternProblem(until)) ?? (filter === undefined ? null : patternProblem(filter, 'filter')) ?? (notify?.ok === false ? notify.problem : null);
      if (badPattern !== null) return refusal(say.badInput('job_status', badPattern, st.check));
      const waitField = wait !== undefined || until !== undefined || untilPort !== undefined;
      if (id === undefined && (lines !== undefined || since !== undefined || maxBytes !== undefined || waitField || filter !== undefined || notify !== undefined)) {
        return refusal(say.linesWithoutId());
      }
      const asked = { lines, since, filter };
      const waitMs = askedWaitMs(wait, until, untilPort);
      const read = {
        ...(lines === undefined ? {} : { lines }),
        ...(since === undefined ? {} : { since }),
        ...(filter === undefined ? {} : { filter }),
        ...(maxBytes === undefined ? {} : { maxBytes }),
        ...(waitMs === undefined ? {} : { waitMs }),
        ...(until === undefined ? {} : { until }),
        ...(untilPort === undefined ? {} : { untilPort }),
      };
      const context = kit.resolve(callContext);
      const capped = read.waitMs === undefined ? undefined : capWait(read.waitMs, context.maxWaitMs);
      if (capped) read.waitMs = capped.waitMs;
      try {
        const own = kit.ownRules('job_status', context);
        if (id === undefined) {
          return await kit.withOwnLocks('job_status', say.callLabel('job_status'), own, context, () => port.list(), async () =>
            listResult(buildListReport(port.list(), port.settings.maxJobs)),
          );
        }
        const target = kit.findJob(id);
        if (!target) throw kit.notFound(id);
        if (notify?.ok) {
          if (!port.notify) return refusal(say.notifyProblem.noNotify());
          await port.notify(id, notify.value);
        }
        // A wait stopped by context.signal answers with the job as it is now.
        const { waitMs: _waitMs, until: _until, untilPort: _untilPort, ...now } = read;
        return await kit.withOwnLocks('job_status', say.callLabel('job_status', id), own, context, () => [target], async () =>
          kit.jobResult(afterCut(await unlessAborted(port.status(id, read), context.signal, () => port.status(id, now)), capped), asked),
        );
      } catch (error) {
        return errorAnswer('job_status', error);
      }
    },
  });
}
