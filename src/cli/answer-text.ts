/**
 * What the shell writes for a tool's answer: the report the answer carries, in the shell's
 * dialect (its hints name the shell's commands, `status 0`, not the model's `job_status {"id": 0}`),
 * rebuilt from the report's fields; a refusal as the tool said it.
 */
import { listReportText, reportText } from '../reports/report.js';
import type { ToolResult } from '../tools/index.js';

export function answerText(result: ToolResult): string {
  if (result.isError) return result.text;
  if (result.list) return listReportText(result.list, 'shell');
  if (!result.job) return result.text;
  const started = reportText(result.job, 'shell');
  // job_restart: the stopped job's header, then the started job's report (as the tool writes it).
  return result.stopped ? `${result.stopped.header}\n${started}` : started;
}
