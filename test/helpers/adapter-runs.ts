/**
 * What the adapter tests share besides the recording of the tools (recorded-tools.ts): an
 * approver that records its questions, FIFO oracles closed after each test, and the check that a
 * run left nothing behind (the FIFO at EOF, and /proc holding no process with the run's mark).
 */
import fs from 'node:fs';
import { afterEach } from 'vitest';
import type { ApprovalAnswer, ApprovalRequest } from '../../src/index.js';
import { EofOracle, processesWithEnv, waitUntil } from './kernel.js';

const oracles: EofOracle[] = [];

afterEach(() => {
  for (const oracle of oracles.splice(0)) {
    // A FIFO no job opened (a failed run) holds its reader's open in the thread pool: end it.
    try {
      if (!oracle.closed) fs.closeSync(fs.openSync(oracle.fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK));
    } catch {
      // no reader left
    }
    oracle.dispose();
  }
});

/** A FIFO oracle, disposed of after the test. */
export function newOracle(): EofOracle {
  const oracle = new EofOracle();
  oracles.push(oracle);
  return oracle;
}

/** An approver that answers `deny` for the tools named (or as `answers` says by tool), `once` otherwise, and records every question. */
export function approver(answers: readonly string[] | Record<string, ApprovalAnswer> = []) {
  const byTool: Record<string, ApprovalAnswer> = Array.isArray(answers) ? Object.fromEntries(answers.map((tool) => [tool, 'deny'])) : answers;
  const asked: ApprovalRequest[] = [];
  const approve = async (request: ApprovalRequest): Promise<ApprovalAnswer> => {
    asked.push(request);
    return byTool[request.tool] ?? 'once';
  };
  return { approve, asked };
}

/** What runs with the mark now, by command line (the negative control of the /proc oracle). */
export function marked(mark: string): string[] {
  return processesWithEnv(`HEPH_TEST_MARK=${mark}`).map((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    } catch {
      return '';
    }
  });
}

/** The run left nothing: the FIFO every job process held is at EOF, and no process has the mark. */
export async function nothingLeft(oracle: EofOracle, mark: string): Promise<void> {
  await oracle.waitEof(20_000);
  await waitUntil(() => processesWithEnv(`HEPH_TEST_MARK=${mark}`).length === 0, "no process with the run's mark", 20_000, () => marked(mark));
}
