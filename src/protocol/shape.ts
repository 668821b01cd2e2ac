/**
 * A tiny shape language for the messages of the channel: one table of shapes (messages.ts) gives
 * both the TypeScript types of the requests (`ShapeType`) and the check the supervisor runs on
 * every request before a handler sees it (`shapeProblem`). A frame that decodes but carries the
 * wrong types (a corrupted or foreign frame) is refused with the field named, so it never reaches
 * a job, a lock file or the native layer (STYLE 8: the boundary is guarded twice).
 */
import { describeValue } from './describe.js';

export type Shape =
  | { readonly kind: 'integer'; readonly min: number }
  | { readonly kind: 'string'; readonly pattern?: RegExp; readonly what?: string }
  | { readonly kind: 'boolean' }
  | { readonly kind: 'bytes' }
  | { readonly kind: 'one-of'; readonly choices: readonly string[] }
  | { readonly kind: 'array'; readonly items: Shape }
  | { readonly kind: 'object'; readonly fields: Readonly<Record<string, Shape>> }
  | { readonly kind: 'optional'; readonly inner: Shape }
  | { readonly kind: 'nullable'; readonly inner: Shape };

export type ObjectShape = Extract<Shape, { kind: 'object' }>;

export const integer = (min: number) => ({ kind: 'integer', min }) as const;
export const string = () => ({ kind: 'string' }) as const;
/** A string that matches `pattern` (`what` says what it is, for the message). */
export const matching = (pattern: RegExp, what: string) => ({ kind: 'string', pattern, what }) as const;
export const boolean = () => ({ kind: 'boolean' }) as const;
export const bytes = () => ({ kind: 'bytes' }) as const;
export const oneOf = <const C extends readonly string[]>(choices: C) => ({ kind: 'one-of', choices }) as const;
export const array = <const S extends Shape>(items: S) => ({ kind: 'array', items }) as const;
export const object = <const F extends Record<string, Shape>>(fields: F) => ({ kind: 'object', fields }) as const;
/** Absent (or null, as msgpack may send an absent field). */
export const optional = <const S extends Shape>(inner: S) => ({ kind: 'optional', inner }) as const;
export const nullable = <const S extends Shape>(inner: S) => ({ kind: 'nullable', inner }) as const;

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type OptionalKeys<F> = { [K in keyof F]: F[K] extends { kind: 'optional' } ? K : never }[keyof F];
type RequiredKeys<F> = Exclude<keyof F, OptionalKeys<F>>;

/** The TypeScript type a shape describes. */
export type ShapeType<S> = S extends { kind: 'integer' }
  ? number
  : S extends { kind: 'string' }
    ? string
    : S extends { kind: 'boolean' }
      ? boolean
      : S extends { kind: 'bytes' }
        ? Uint8Array
        : S extends { kind: 'one-of'; choices: readonly (infer C)[] }
          ? C
          : S extends { kind: 'array'; items: infer I }
            ? ShapeType<I>[]
            : S extends { kind: 'optional'; inner: infer I }
              ? ShapeType<I> | undefined
              : S extends { kind: 'nullable'; inner: infer I }
                ? ShapeType<I> | null
                : S extends { kind: 'object'; fields: infer F }
                  ? Simplify<{ [K in RequiredKeys<F>]: ShapeType<F[K]> } & { [K in OptionalKeys<F>]?: ShapeType<F[K]> }>
                  : never;

function wanted(shape: Shape): string {
  switch (shape.kind) {
    case 'integer':
      return `a whole number from ${shape.min} up`;
    case 'string':
      return shape.what ?? 'a string';
    case 'boolean':
      return 'true or false';
    case 'bytes':
      return 'bytes';
    case 'one-of':
      return `one of ${shape.choices.join(', ')}`;
    case 'array':
      return `an array of ${wanted(shape.items).replace(/^an? /, '')}s`;
    case 'object':
      return 'an object';
    case 'optional':
    case 'nullable':
      return wanted(shape.inner);
  }
}

/** The first problem of `value` against `shape`, as "`path` must be ...; received ...", or null. */
export function shapeProblem(shape: Shape, value: unknown, path: string): string | null {
  const wrong = () => `${path} must be ${wanted(shape)}; received ${describeValue(value)}`;
  switch (shape.kind) {
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value) && value >= shape.min ? null : wrong();
    case 'string':
      return typeof value === 'string' && (shape.pattern === undefined || shape.pattern.test(value)) ? null : wrong();
    case 'boolean':
      return typeof value === 'boolean' ? null : wrong();
    case 'bytes':
      return value instanceof Uint8Array ? null : wrong();
    case 'one-of':
      return typeof value === 'string' && shape.choices.includes(value) ? null : wrong();
    case 'optional':
      return value === undefined || value === null ? null : shapeProblem(shape.inner, value, path);
    case 'nullable':
      return value === null ? null : shapeProblem(shape.inner, value, path);
    case 'array': {
      if (!Array.isArray(value)) return wrong();
      for (const [index, item] of value.entries()) {
        const problem = shapeProblem(shape.items, item, `${path}[${index}]`);
        if (problem !== null) return problem;
      }
      return null;
    }
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return wrong();
      const fields = value as Record<string, unknown>;
      for (const [name, field] of Object.entries(shape.fields)) {
        const problem = shapeProblem(field, fields[name], path === '' ? name : `${path}.${name}`);
        if (problem !== null) return problem;
      }
      return null;
    }
  }
}
