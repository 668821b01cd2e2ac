/**
 * Start times on the host's boot clock (issue 28, item 2): the offset a time namespace adds to
 * /proc's start times, and how a recorded start time is matched with one read in a namespace.
 */
import { describe, expect, it } from 'vitest';
import { onHostBootClock, parseBootOffset, sameStartTime } from '../../supervisor/platform/procfs.js';

describe('the boot clock of a time namespace', () => {
  it('reads the boot-time offset in ticks, and whether it is whole ticks', () => {
    expect(parseBootOffset('monotonic 0 0\nboottime 0 0\n')).toEqual({ ticks: 0, exact: true });
    expect(parseBootOffset('monotonic           0         0\nboottime        86400         0\n')).toEqual({ ticks: 8_640_000, exact: true });
    expect(parseBootOffset('boottime -5 20000000\n')).toEqual({ ticks: -498, exact: true });
    expect(parseBootOffset('boottime 1 5000000\n')).toEqual({ ticks: 100, exact: false });
    expect(parseBootOffset('')).toEqual({ ticks: 0, exact: true });
  });

  it('takes the offset off a start time, leaving a malformed one as it is', () => {
    const day = parseBootOffset('boottime 86400 0');
    expect(onHostBootClock('8640026', day)).toBe('26');
    expect(onHostBootClock('26', parseBootOffset(''))).toBe('26');
    expect(onHostBootClock('', day)).toBe('');
  });

  it('matches start times exactly, within one tick only where the offset is not whole ticks', () => {
    const whole = parseBootOffset('boottime 86400 0');
    const partial = parseBootOffset('boottime 86400 5000000');
    expect(sameStartTime('26', '26', whole)).toBe(true);
    expect(sameStartTime('26', '27', whole)).toBe(false);
    expect(sameStartTime('26', null, whole)).toBe(false);
    expect(sameStartTime('26', '27', partial)).toBe(true);
    expect(sameStartTime('27', '26', partial)).toBe(true);
    expect(sameStartTime('26', '28', partial)).toBe(false);
  });
});
