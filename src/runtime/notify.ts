/**
 * Notify watches as the runtime keeps them: checked once (a pattern RE2 runs, a TCP port), kept
 * on the job's record by number (the number the supervisor's `notified` events carry), and turned
 * into the host's `notified` job event with the pattern or port it was asked for.
 */
import { InvalidInputError } from '../protocol/errors.js';
import type { NotifyWatch, SupervisorEvent } from '../protocol/messages.js';
import { MAX_NOTIFY_WATCHES } from '../protocol/notify.js';
import type { PatternSpec } from '../protocol/pattern.js';
import { notifyProblem } from '../wording/index.js';
import type { NotifiedFacts } from '../facts.js';
import { checkedPattern } from './input-checks.js';

/** What a host (or a model, through the tools) asks to be told of: a matching line, a listening port, or both. */
export interface Notify {
  /** A regular expression (or its source), run by RE2 on each new complete line. */
  pattern?: RegExp | string;
  /** A TCP port (1-65535): told once, when a process of the job listens on it. */
  port?: number;
}

/** A checked watch: the pattern as the supervisor compiles it, the port. */
export interface NotifySpec {
  until?: PatternSpec;
  port?: number;
}

function sameSpec(a: NotifySpec, b: NotifySpec): boolean {
  return a.port === b.port && a.until?.source === b.until?.source && a.until?.flags === b.until?.flags;
}

/** `value` (one Notify or a list) checked; InvalidInputError names what is wrong and what is accepted. */
export function checkNotify(value: unknown, field = 'notify'): NotifySpec[] {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  const specs: NotifySpec[] = [];
  for (const [index, item] of list.entries()) {
    const name = Array.isArray(value) ? `${field}[${index}]` : field;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new InvalidInputError(notifyProblem.notAnObject(name, item));
    const { pattern, port } = item as Notify;
    if (pattern === undefined && port === undefined) throw new InvalidInputError(notifyProblem.empty(name));
    if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65_535)) throw new InvalidInputError(notifyProblem.badPort(name, port));
    const spec: NotifySpec = { ...(pattern === undefined ? {} : { until: checkedPattern(pattern, `${name}.pattern`) }), ...(port === undefined ? {} : { port }) };
    if (!specs.some((known) => sameSpec(known, spec))) specs.push(spec);
  }
  if (specs.length > MAX_NOTIFY_WATCHES) throw new InvalidInputError(notifyProblem.tooManyAsked(field, specs.length, MAX_NOTIFY_WATCHES));
  return specs;
}

/** `added` joined to a job's `watches` (the same watch twice is one); InvalidInputError past the bound. */
export function addWatches(id: number, watches: NotifySpec[], added: readonly NotifySpec[]): NotifySpec[] {
  const fresh = added.filter((spec) => !watches.some((known) => sameSpec(known, spec)));
  if (watches.length + fresh.length > MAX_NOTIFY_WATCHES) throw new InvalidInputError(notifyProblem.tooMany(id, watches.length, MAX_NOTIFY_WATCHES));
  watches.push(...fresh);
  return fresh;
}

/** The watch numbered `number` as the supervisor's request carries it. */
export function watchRequest(spec: NotifySpec, number: number): NotifyWatch {
  return { watch: number, ...(spec.until ? { until: spec.until } : {}), ...(spec.port === undefined ? {} : { port: spec.port }) };
}

/** A `notified` event's facts, with the watch it answers. */
export function notifiedFacts(spec: NotifySpec, event: Extract<SupervisorEvent, { event: 'notified' }>): NotifiedFacts {
  if (event.listening) return { port: spec.port!, count: 1, everyLine: false };
  return {
    pattern: spec.until!.source,
    line: event.line ?? '',
    lineNumber: event.seq ?? 0,
    count: event.count,
    everyLine: event.count > 1 && event.count === event.scanned,
  };
}

/** A checked watch as a caller would ask for it again (a restart carries its job's watches). */
export function notifyInput(spec: NotifySpec): Notify {
  const pattern = spec.until && (spec.until.flags ? new RegExp(spec.until.source, spec.until.flags) : spec.until.source);
  return { ...(pattern === undefined ? {} : { pattern }), ...(spec.port === undefined ? {} : { port: spec.port }) };
}
