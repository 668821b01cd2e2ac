/** An option that must be one of a few words: a refusal names it, what is accepted and what came. */
import { describeValue } from '../protocol/describe.js';

/** One of `choices`, or `fallback` when the option is absent; else a RangeError naming them. */
export function choiceOption<T extends string>(name: string, value: unknown, choices: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!(choices as readonly unknown[]).includes(value)) {
    throw new RangeError(`option ${name} must be one of ${choices.join(', ')}; received ${describeValue(value)}`);
  }
  return value as T;
}
