/** What each containment mode cannot prevent, in plain words (capabilities().limitations). */
import type { Containment } from '../protocol/messages.js';

/** Never claim more than was tested: what each containment mode cannot prevent. */
export function containmentLimitations(containment: Containment): string[] {
  const common =
    'At the end of the session (close, or the runtime dying) every process below the supervisor is killed, whichever job it came from.';
  if (containment.mode === 'cgroup') {
    return [
      'A job running with enough privilege (e.g. as root) can move its processes into another cgroup; job_kill still ' +
        "stops them through the subreaper and the job's environment marker, unless they also clear their environment.",
      common,
    ];
  }
  return [
    "Processes are attributed to a job by its session and process group, by descent, and by the job's environment " +
      'marker; one that leaves the session and clears its environment escapes job_kill.',
    'Without cgroups, CPU time counts only live processes and their waited-for children.',
    common,
  ];
}
