/**
 * What a containment mode cannot promise, as capabilities().limitations lists it.
 */
import type { Containment } from '../protocol/messages.js';

/** Never claim more than was tested: what each containment mode cannot prevent (capabilities().limitations). */
export function containmentLimitations(containment: Containment): string[] {
  const common =
    'At the end of the session (close, or the runtime dying) every process below the supervisor is killed, whichever job it came from.';
  const borrowed =
    "A process is never taken for a job's because it holds one of the job's pipes or its terminal (any process of this " +
    "user can open them through /proc, and tmux's server holds its control clients' stdio): job_kill and the cleanup " +
    'after a supervisor crash leave it alone, and it may keep the pipe open after the job is cleaned up.';
  if (containment.mode === 'cgroup') {
    return [
      'A job running with enough privilege (e.g. as root) can move its processes into another cgroup; job_kill still ' +
        "stops them through the subreaper and the job's environment marker, unless they also clear their environment " +
        '(e.g. `env -i`). Such a process also survives the death of the supervisor (it is reparented to init, where ' +
        'nothing tells it belonged to the job).',
      'If the runtime and the supervisor die together (one SIGKILL for both, an OOM kill), no job is stopped at that ' +
        'moment: the next supervisor this user starts kills every process carrying their marker and, when it makes ' +
        'its cgroups in the same place, everything left in their cgroups.',
      borrowed,
      common,
    ];
  }
  return [
    "Processes are attributed to a job by its session and process group, by descent, and by the job's environment " +
      'marker. One that leaves the session and clears its environment (e.g. `env -i setsid -f CMD`) escapes job_kill; ' +
      'so does one that writes a long process title over it. close() still kills it, but if the supervisor dies first it is reparented to init, where nothing tells it ' +
      'belonged to the job, and it survives.',
    'If the runtime and the supervisor die together (one SIGKILL for both, an OOM kill), no job is stopped at that ' +
      'moment: the next supervisor this user starts kills every process carrying their marker; ' +
      'one that cleared its environment (e.g. `env -i setsid -f CMD`) survives.',
    'Without cgroups, CPU time counts only live processes and their waited-for children.',
    borrowed,
    common,
  ];
}
