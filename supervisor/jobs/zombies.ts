/** Whether any child of this process is a zombie (exited, not yet reaped by our reaper thread). */
import { native } from '../native.js';

/** One waitid peek (WNOWAIT leaves the child to the reaper), not a /proc read per thread and child. */
export function hasZombieChildren(): boolean {
  return native.hasZombieChild();
}
