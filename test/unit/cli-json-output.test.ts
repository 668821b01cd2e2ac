/**
 * `--json` answers carry the tool's result as data: the report or the list the text was made from,
 * and `refused` for a refusal. (Before tools answered with data, the shell matched the text back to
 * the reports it had seen; these are that test's cases, now over the result fields.)
 */
import { describe, expect, it } from 'vitest';
import { answerObject, endObject } from '../../src/cli/json-output.js';
import { buildListReport } from '../../src/index.js';
import { report } from '../helpers/job-report.js';

describe('answers as structured reports', () => {
  it('carries the report a text was made from, the list, or a refusal', () => {
    const job = report({});
    expect(answerObject('status', 'job_status', { id: 0 }, { text: job.text, isError: false, job })).toEqual({
      type: 'answer',
      command: 'status',
      tool: 'job_status',
      input: { id: 0 },
      refused: false,
      text: job.text,
      job,
    });
    const list = buildListReport([job], 8);
    expect(answerObject('status', 'job_status', {}, { text: list.text, isError: false, list })).toMatchObject({
      text: list.text,
      list: { running: 1, maxJobs: 8 },
      refused: false,
    });
    const refusal = 'background is refused: 8 of 8 jobs are running';
    const refused = answerObject('background', 'background', { command: 'x' }, { text: refusal, isError: true });
    expect(refused).toEqual({ type: 'answer', command: 'background', tool: 'background', input: { command: 'x' }, refused: true, text: refusal });
  });

  it('the end line says how many jobs were stopped, and whether a signal ended the session', () => {
    const jobs = [report({ state: 'killed', signal: 'SIGTERM' })];
    expect(endObject({ stopped: 1, jobs })).toEqual({ type: 'end', stopped: 1, jobs });
    expect(endObject({ stopped: 1, jobs }, true)).toEqual({ type: 'end', stopped: 1, jobs, signal: true });
  });
});
