/** The descriptors a supervisor starts with. */
import { native } from './native.js';

/**
 * Closes descriptors the runtime's process leaked to us (opened without close-on-exec, which
 * libuv's spawn passes on): we must not keep a pipe its host waits on open. Everything Node and
 * libuv open is close-on-exec, and 0-2 and the channel are ours, so only those are kept. Native:
 * one fcntl per descriptor, where reading each one's /proc/self/fdinfo from JavaScript cost ~1 ms
 * of the start with the 16 a test runtime leaks (bench: start), and a runtime may leak hundreds.
 */
export function closeInheritedDescriptors(lastKept: number): number {
  return native.closeInheritedFds(lastKept);
}
