/** Whether any child of this process is a zombie (exited, not yet reaped by our reaper thread). */
import { childrenOf, readProcStat } from '../platform/procfs.js';

export function hasZombieChildren(): boolean {
  for (const pid of childrenOf(process.pid)) if (readProcStat(pid)?.state === 'Z') return true;
  return false;
}
