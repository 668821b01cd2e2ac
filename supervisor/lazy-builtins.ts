/**
 * Built-in modules the supervisor needs only after its hello, loaded at their first use: an
 * import at the top of a bundled module is a require when the bundle starts, and node:crypto
 * (with its ~20 internal modules) and node:tty cost milliseconds of every supervisor's start
 * (bench: start). process.getBuiltinModule returns the module Node already has or loads it.
 */
export const crypto = (): typeof import('node:crypto') => process.getBuiltinModule('node:crypto');
export const tty = (): typeof import('node:tty') => process.getBuiltinModule('node:tty');
export const v8 = (): typeof import('node:v8') => process.getBuiltinModule('node:v8');
