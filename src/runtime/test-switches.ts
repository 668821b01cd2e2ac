/** Switches only tests set: carried on a runtime's options, and in the hello's `testing` block. */
import { LIMITS_BY, SPAWN_PLACEMENTS, type TestSwitches } from '../protocol/messages.js';
import { choiceOption } from './choice-option.js';

/**
 * Switches only tests set (the fork spawn path instead of clone3, where leaders are spawned) ride
 * on a runtime's options under this key (src/testing.ts sets it): no public option or declaration
 * names them, and a symbol survives the spreads that copy options.
 */
export const TEST_SWITCHES = Symbol('heph-jobs test switches');

/** The test switches on `options` (checked), or null when no test set any. */
export function testSwitchesOf(options: object): TestSwitches | null {
  const given = (options as { [TEST_SWITCHES]?: { forceFork?: unknown; spawnOn?: unknown; limitsBy?: unknown } })[TEST_SWITCHES];
  if (given === undefined) return null;
  return {
    forceFork: given.forceFork === true,
    spawnOn: choiceOption('spawnOn', given.spawnOn, SPAWN_PLACEMENTS, 'auto'),
    limitsBy: choiceOption('limitsBy', given.limitsBy, LIMITS_BY, 'auto'),
  };
}
