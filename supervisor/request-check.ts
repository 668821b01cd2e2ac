/**
 * The supervisor's own check of each request's fields, before any handler acts on it. The runtime
 * validates everything a caller gives it, so a well-behaved runtime never fails here; this is the
 * second guard at the boundary (STYLE 8): a frame that decodes but carries the wrong types (a
 * corrupted or foreign frame) gets a ProtocolError naming the field, and never reaches a job, a
 * lock file or the native layer (a kill whose signal is not INT, TERM or KILL must not stop a job).
 * Unknown request types and unknown extra fields are left to the handlers.
 */
import { ProtocolError } from '../src/errors.js';
import type { Request } from '../src/protocol/messages.js';

type Fields = Record<string, unknown>;

function shown(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 37)}...` : value);
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

function fail(type: string, field: string, wanted: string, value: unknown): never {
  throw new ProtocolError(`request ${type}: ${field} must be ${wanted}; received ${shown(value)}`);
}

function object(type: string, field: string, value: unknown): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(type, field, 'an object', value);
  return value as Fields;
}

function integer(type: string, field: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) fail(type, field, `a whole number from ${min} up`, value);
}

function optionalInteger(type: string, field: string, value: unknown, min: number): void {
  if (value !== undefined && value !== null) integer(type, field, value, min);
}

function string(type: string, field: string, value: unknown): void {
  if (typeof value !== 'string') fail(type, field, 'a string', value);
}

function boolean(type: string, field: string, value: unknown): void {
  if (typeof value !== 'boolean') fail(type, field, 'true or false', value);
}

function oneOf(type: string, field: string, value: unknown, choices: readonly string[]): void {
  if (typeof value !== 'string' || !choices.includes(value)) fail(type, field, `one of ${choices.join(', ')}`, value);
}

/** Throws ProtocolError when a known request's fields have the wrong types. */
export function checkRequest(request: Request): void {
  const r = request as unknown as Fields & { type: string };
  const { type } = r;
  switch (type) {
    case 'hello': {
      const config = object(type, 'config', r.config);
      string(type, 'config.lockDir', config.lockDir);
      oneOf(type, 'config.containment', config.containment, ['auto', 'cgroup', 'process-group']);
      if (config.cgroupParent !== null) string(type, 'config.cgroupParent', config.cgroupParent);
      boolean(type, 'config.forceFork', config.forceFork);
      integer(type, 'config.killGraceMs', config.killGraceMs, 0);
      integer(type, 'config.drainMs', config.drainMs, 0);
      const output = object(type, 'config.output', config.output);
      integer(type, 'config.output.maxLines', output.maxLines, 1);
      integer(type, 'config.output.maxLineBytes', output.maxLineBytes, 1);
      integer(type, 'config.output.maxBytes', output.maxBytes, 1);
      integer(type, 'config.output.headLines', output.headLines, 0);
      return;
    }
    case 'spawn': {
      const params = object(type, 'params', r.params);
      integer(type, 'params.job', params.job, 0);
      for (const field of ['command', 'cwd', 'shell'] as const) string(type, `params.${field}`, params[field]);
      if (!Array.isArray(params.env) || !params.env.every((entry) => typeof entry === 'string')) fail(type, 'params.env', 'an array of strings', params.env);
      boolean(type, 'params.stdin', params.stdin);
      boolean(type, 'params.merge', params.merge);
      return;
    }
    case 'kill': {
      const params = object(type, 'params', r.params);
      integer(type, 'params.job', params.job, 0);
      oneOf(type, 'params.signal', params.signal, ['INT', 'TERM', 'KILL']);
      integer(type, 'params.graceMs', params.graceMs, 0);
      return;
    }
    case 'read': {
      const params = object(type, 'params', r.params);
      integer(type, 'params.job', params.job, 0);
      optionalInteger(type, 'params.tail', params.tail, 0);
      optionalInteger(type, 'params.since', params.since, -1);
      optionalInteger(type, 'params.maxBytes', params.maxBytes, 1);
      return;
    }
    case 'facts':
    case 'forget':
      integer(type, 'job', r.job, 0);
      return;
    case 'write':
      integer(type, 'job', r.job, 0);
      if (!(r.data instanceof Uint8Array)) fail(type, 'data', 'bytes', r.data);
      boolean(type, 'close', r.close);
      return;
    case 'subscribe':
      integer(type, 'job', r.job, 0);
      boolean(type, 'on', r.on);
      return;
    case 'lock': {
      integer(type, 'lease', r.lease, 0);
      if (!Array.isArray(r.resources)) fail(type, 'resources', 'an array', r.resources);
      for (const [i, item] of (r.resources as unknown[]).entries()) {
        const res = object(type, `resources[${i}]`, item);
        for (const field of ['resource', 'kind', 'value'] as const) string(type, `resources[${i}].${field}`, res[field]);
        oneOf(type, `resources[${i}].mode`, res.mode, ['exclusive', 'shared']);
      }
      const owner = object(type, 'owner', r.owner);
      string(type, 'owner.label', owner.label);
      if (owner.job !== null) integer(type, 'owner.job', owner.job, 0);
      return;
    }
    case 'unlock':
      integer(type, 'lease', r.lease, 0);
      return;
    default:
      return;
  }
}
