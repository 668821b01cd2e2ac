/** What the shell writes for a tool's answer: the report in the shell's dialect, from its fields; a refusal as the tool said it. */
import { describe, expect, it } from 'vitest';
import { answerText } from '../../src/cli/answer-text.js';
import { buildListReport } from '../../src/index.js';
import { report } from '../helpers/job-report.js';

describe('answerText', () => {
  it('a report: its hints name the shell\'s commands, not the model\'s tool calls', () => {
    const job = report({ id: 3, header: 'job 3 running 0:01 npm run dev', text: 'job 3 running 0:01 npm run dev\njob_status {"id": 3} reads more; job_kill {"id": 3} stops it.' });
    expect(answerText({ text: job.text, isError: false, job })).toBe('job 3 running 0:01 npm run dev\nstatus 3 reads more; kill 3 stops it.');
  });

  it('the list, and a restart (the stopped job\'s header, then the started job\'s report)', () => {
    const list = buildListReport([], 8);
    expect(answerText({ text: list.text, isError: false, list })).toBe('no jobs yet; background CMD starts one.\n0 of 8 running');
    const stopped = report({ id: 0, state: 'killed', signal: 'SIGTERM', cleanedUp: true, header: 'job 0 killed SIGTERM 0:05 npm run dev' });
    const started = report({ id: 1, header: 'job 1 running 0:00 npm run dev' });
    expect(answerText({ text: 'ignored', isError: false, job: started, stopped })).toBe(
      'job 0 killed SIGTERM 0:05 npm run dev\njob 1 running 0:00 npm run dev\nstatus 1 reads more; kill 1 stops it.',
    );
  });

  it('a refusal is the tool\'s own sentence', () => {
    const text = 'job_status: there is no job 7. No job exists yet (background starts one). job_status {} lists every job.';
    expect(answerText({ text, isError: true })).toBe(text);
  });
});
