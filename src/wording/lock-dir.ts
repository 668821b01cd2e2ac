/**
 * The lock directory: what its filesystem cannot promise, and the warning when exclusion was lost.
 */
import type { LockDirInfo, LockDirProblem } from '../protocol/messages.js';

function lockDirProblemText(problem: LockDirProblem): string {
  const mode = problem.mode === undefined ? '' : ` (mode ${problem.mode.toString(8).padStart(4, '0')})`;
  switch (problem.reason) {
    case 'symlink':
      return `${problem.level} is a symlink owned by uid ${problem.uid}, neither root nor this user`;
    case 'owner':
      return `${problem.level} belongs to uid ${problem.uid}`;
    case 'writable':
      return `${problem.level} may be written by other users and is not sticky${mode}`;
    case 'access':
      return `${problem.level} grants other users access${mode}`;
    case 'not-directory':
      return `${problem.level} is not a directory`;
    case 'changed':
      return `${problem.level} changed while it was being checked`;
    case 'loop':
      return `${problem.level} leads through too many symlinks`;
    case 'error':
      return `${problem.level} could not be checked: ${problem.detail ?? 'unknown error'}`;
  }
}

/**
 * What capabilities().limitations says when the lock directory asked for (or the default) was not
 * safe: which level failed, and what using a private directory instead costs.
 */
export function lockDirLimitations(info: LockDirInfo): string[] {
  if (!info.refused) return [];
  return [
    `The lock directory ${info.refused.dir} was not used because ${lockDirProblemText(info.refused.problem)}; ` +
      `resource locks are kept in the private lock directory ${info.dir} instead, so they exclude this runtime's own ` +
      'jobs and calls but no other runtime on this machine.',
  ];
}

/**
 * The process warning (code HEPH_JOBS_LOCK_BREACH) when a supervisor died and some of the leases it
 * held for this runtime were not kept in the lock vault: `open` could have been taken by another
 * runtime on this machine in between; `contended` (the host's own) are held by another now.
 */
export function lockBreachWarning(open: readonly string[], contended: readonly string[]): string {
  const lost =
    contended.length === 0
      ? ''
      : ` Another runtime holds ${contended.join(', ')} now, so this runtime's hold on them excludes only its own calls until released.`;
  return (
    `heph-jobs: the supervisor died while this runtime held ${open.join(', ')}, and their kernel locks were not kept ` +
    `through the crash: another runtime on this machine could have taken them before a fresh supervisor took them again.${lost}`
  );
}
