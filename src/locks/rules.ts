/**
 * Lock rules: host configuration mapping each tool or host action to resource templates,
 * expanded per call, e.g. `{ background: ["worktree:{ref}"], job_kill: ["worktree:{ref}"] }`.
 *
 * A template is a resource string with `{name}` placeholders (or `{ resource, mode }` with such a
 * string). Placeholder names are identifiers; `{ref}` and `{worktree}` are the standard ones, any
 * other must be passed in `vars`. A name with no rules expands to no resources.
 */

import { describeValue } from '../protocol/describe.js';
import {
  badRuleExpansionMessage,
  badRuleTemplateMessage,
  lockRulesNotArrayMessage,
  lockRulesNotObjectMessage,
  rulePlaceholderMessage,
  ruleTemplateNotStringMessage,
  ruleTemplateReason as why,
  ruleVariablesText,
} from '../wording/index.js';
import { BadLockRuleError, BadResourceError } from '../protocol/errors.js';
import { normalizeResource, normalizeResources, type LockMode, type NormalizedResource } from './resource.js';

export type RuleTemplate = string | { resource: string; mode?: LockMode };

/** Tool or action name → resource templates. */
export type LockRules = Record<string, readonly RuleTemplate[]>;

/** Values for placeholders. `undefined` means the call does not provide that variable. */
export interface RuleVars {
  ref?: string;
  worktree?: string;
  [name: string]: string | number | undefined;
}

/** Placeholders every host knows; a template may use them even when a call leaves them unset. */
export const STANDARD_RULE_VARIABLES: readonly string[] = ['ref', 'worktree'];

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Part = string | { name: string };

/** Splits a template into literal text and placeholders; throws on malformed braces. */
function parseTemplate(template: string, ruleName: string): Part[] {
  const parts: Part[] = [];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    const close = template.indexOf('}', i);
    if (close >= 0 && (open < 0 || close < open)) {
      throw malformed(template, ruleName, why.strayClose(close));
    }
    if (open < 0) {
      parts.push(template.slice(i));
      break;
    }
    if (open > i) parts.push(template.slice(i, open));
    const end = template.indexOf('}', open + 1);
    if (end < 0) throw malformed(template, ruleName, why.unclosed(open));
    const name = template.slice(open + 1, end);
    if (!NAME_RE.test(name)) throw malformed(template, ruleName, why.notAName(name));
    parts.push({ name });
    i = end + 1;
  }
  return parts;
}

function malformed(template: string, ruleName: string, reason: string): BadLockRuleError {
  return new BadLockRuleError(badRuleTemplateMessage(template, ruleName, reason), {
    details: { rule: ruleName, template, reason },
  });
}

function templateText(template: unknown, ruleName: string): string {
  if (typeof template === 'string') return template;
  if (template !== null && typeof template === 'object') {
    const resource = (template as { resource?: unknown }).resource;
    if (typeof resource === 'string') return resource;
  }
  const shown = describeValue(template);
  throw new BadLockRuleError(ruleTemplateNotStringMessage(shown, ruleName), {
    details: { rule: ruleName, template: shown },
  });
}

/** The variables a template may use in this call (standard ones first), as the messages list them. */
function describeVars(vars: RuleVars): string {
  const names = new Set([...STANDARD_RULE_VARIABLES, ...Object.keys(vars)]);
  return ruleVariablesText([...names].map((name) => [name, vars[name]] as const));
}

/**
 * Checks a rule set's shape and every template's syntax (not the variables, which come per call).
 * Call it when the host configuration is loaded, so a typo fails at start, not at the first call.
 * @throws BadLockRuleError
 */
export function validateLockRules(rules: unknown): LockRules {
  if (rules === null || typeof rules !== 'object' || Array.isArray(rules)) {
    const shown = describeValue(rules);
    throw new BadLockRuleError(lockRulesNotObjectMessage(shown), { details: { received: shown } });
  }
  for (const [name, templates] of Object.entries(rules)) {
    if (!Array.isArray(templates)) {
      const shown = describeValue(templates);
      throw new BadLockRuleError(lockRulesNotArrayMessage(name, shown), { details: { rule: name, received: shown } });
    }
    for (const template of templates) parseTemplate(templateText(template, name), name);
  }
  return rules as LockRules;
}

/**
 * Expands the templates configured for `name` with `vars` and validates the result.
 * Returns [] when `name` has no rules.
 * @throws BadLockRuleError for a malformed template, an unknown placeholder, or a variable the
 *   call does not provide (the message names the template and the variables available);
 *   BadResourceError when an expansion is not a valid resource.
 */
export function expandRules(rules: LockRules, name: string, vars: RuleVars = {}): readonly NormalizedResource[] {
  if (!Object.prototype.hasOwnProperty.call(rules, name)) return [];
  const templates = rules[name];
  if (templates === undefined) return [];
  if (!Array.isArray(templates)) validateLockRules({ [name]: templates });
  const expanded: (string | { resource: string; mode?: LockMode })[] = [];
  for (const template of templates) {
    const text = templateText(template, name);
    let out = '';
    for (const part of parseTemplate(text, name)) {
      if (typeof part === 'string') {
        out += part;
        continue;
      }
      const known =
        STANDARD_RULE_VARIABLES.includes(part.name) || Object.prototype.hasOwnProperty.call(vars, part.name);
      const value = known ? vars[part.name] : undefined;
      if (value === undefined) {
        throw new BadLockRuleError(rulePlaceholderMessage(text, name, part.name, !known, describeVars(vars)), {
          details: { rule: name, template: text, placeholder: part.name, available: Object.keys(vars) },
        });
      }
      out += String(value);
    }
    const item = typeof template === 'string' ? out : { ...template, resource: out };
    try {
      normalizeResource(item);
    } catch (error) {
      if (!(error instanceof BadResourceError)) throw error;
      throw new BadResourceError(badRuleExpansionMessage(text, name, describeVars(vars), error.message), {
        cause: error,
        details: { ...error.details, rule: name, template: text },
      });
    }
    expanded.push(item);
  }
  return normalizeResources(expanded);
}
