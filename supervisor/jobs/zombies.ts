/** Whether a child of this process has exited, or is exiting, and our reaper thread has not reaped it yet. */
import { native } from '../native.js';
import { adoptedChildMidExit } from '../containment/stragglers.js';

/**
 * One waitid peek for zombies (WNOWAIT leaves the child to the reaper), then the adopted children
 * still in the kernel's exit path, whose marker can no longer be read to tell whose they are.
 */
export function hasUnreapedChildren(): boolean {
  return native.hasZombieChild() || adoptedChildMidExit();
}
