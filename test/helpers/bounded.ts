/**
 * Options for every synchronous child of a test. A child that never ends (Node itself can
 * deadlock in its exit, nodejs/node#54918) would block the worker, whose timers then never fire:
 * the suite hangs instead of one test failing with the child's name.
 */
export const BOUNDED = { timeout: 30_000, killSignal: 'SIGKILL' } as const;
