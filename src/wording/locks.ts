/**
 * The lock table's explanations. Callers pass facts: owners, resources, blockers, and received
 * values already shown with describeValue (src/protocol/describe.ts).
 */
import type { LockBlockerFacts, LockOwnerFacts, LockRequestFacts, LockResourceFacts } from '../facts.js';

/** Blockers named in one message; a long queue would otherwise make a message of thousands of lines. */
const MAX_BLOCKERS_SHOWN = 8;

/** `port:5173` or `path:/x (shared)`: how a resource is shown in messages. */
export function formatResource(res: LockResourceFacts): string {
  return res.mode === 'shared' ? `${res.resource} (shared)` : res.resource;
}

function listLockResources(resources: readonly LockResourceFacts[]): string {
  return resources.length === 0 ? '(no resources)' : resources.map(formatResource).join(', ');
}

/** `"npm run dev" (kind=job, jobId=3)`: the label, then the owner's other plain fields. */
export function describeOwner(owner: LockOwnerFacts): string {
  const extras: string[] = [];
  for (const [key, value] of Object.entries(owner)) {
    if (key === 'label') continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      extras.push(`${key}=${value}`);
    }
  }
  const label = JSON.stringify(owner.label);
  return extras.length === 0 ? label : `${label} (${extras.join(', ')})`;
}

/** `port:5173 is held by "npm run dev" (kind=job, jobId=3)`; one clause per blocker, `; `-joined. */
export function describeBlockers(blockers: readonly LockBlockerFacts[]): string {
  const clauses: string[] = [];
  for (const b of blockers) {
    const theirs = b.resource.resource === b.wants.resource ? '' : ` (through ${formatResource(b.resource)})`;
    const how = b.holding ? 'is held by' : 'is wanted first by';
    const who = b.holding ? describeOwner(b.owner) : `${describeOwner(b.owner)}, which arrived earlier and waits`;
    const clause = `${formatResource(b.wants)}${theirs} ${how} ${who}`;
    if (!clauses.includes(clause)) clauses.push(clause);
  }
  if (clauses.length <= MAX_BLOCKERS_SHOWN) return clauses.join('; ');
  const rest = clauses.length - MAX_BLOCKERS_SHOWN;
  return `${clauses.slice(0, MAX_BLOCKERS_SHOWN).join('; ')}; and ${rest} more (see the lock table snapshot)`;
}

/** `port:1, path:/x (shared) for "npm run dev" (kind=job)` */
function lockRequestText(req: LockRequestFacts): string {
  return `${listLockResources(req.resources)} for ${describeOwner(req.owner)}`;
}

/** What is in the way, then how to free it when jobs hold it (`holdingJobIds`). */
function blockedBy(blockers: readonly LockBlockerFacts[], holdingJobIds: readonly string[]): string {
  const hint =
    holdingJobIds.length === 0
      ? ''
      : ` To free them, stop the holding job: ${holdingJobIds.map((id) => `/job-kill ${id}`).join(', ')}.`;
  return `${describeBlockers(blockers)}.${hint}`;
}

/** LockTimeoutError: the wait for the table ran out. */
export function lockTimeoutMessage(
  req: LockRequestFacts,
  ms: number,
  blockers: readonly LockBlockerFacts[],
  holdingJobIds: readonly string[],
): string {
  return `timed out after ${ms} ms waiting for ${lockRequestText(req)}: ${blockedBy(blockers, holdingJobIds)}`;
}

/** LockTimeoutError: the table granted, the kernel locks (the backend) did not in time. */
export function lockBackendTimeoutMessage(req: LockRequestFacts, ms: number): string {
  return (
    `timed out after ${ms} ms waiting for the kernel locks on ${lockRequestText(req)}: this runtime grants ` +
    'them, but another process holds at least one (another heph runtime on this machine?)'
  );
}

/** LockBusyError: `wait: false` or tryAcquire, and something is in the way. */
export function lockBusyMessage(
  req: LockRequestFacts,
  blockers: readonly LockBlockerFacts[],
  holdingJobIds: readonly string[],
): string {
  return `cannot lock ${lockRequestText(req)} now: ${blockedBy(blockers, holdingJobIds)}`;
}

/** LockCancelledError: the caller's AbortSignal fired, while queued or while the backend was asked. */
export function lockCancelledMessage(
  req: LockRequestFacts,
  blockers: readonly LockBlockerFacts[],
  whileBackend: boolean,
): string {
  const where = whileBackend
    ? ' while waiting for the kernel locks'
    : blockers.length > 0
      ? ` while waiting (${describeBlockers(blockers)})`
      : ' before it could be granted';
  return `lock request for ${lockRequestText(req)} was cancelled${where}`;
}

/** LockSyncUnavailableError. */
export const LOCK_SYNC_UNAVAILABLE =
  'tryAcquire() cannot take locks synchronously on a table with a backend (the kernel locks ' +
  'are taken asynchronously); use `await table.acquire(owner, resources, { wait: false })`, ' +
  'which fails at once with ERR_LOCK_BUSY instead of waiting';

/** The process warning when a backend's release fails (the local hold is released anyway). */
export function lockBackendReleaseFailedWarning(leaseId: number, owner: LockOwnerFacts, error: string): string {
  return `heph-jobs: releasing the backend locks of lease ${leaseId} (${describeOwner(owner)}) failed: ${error}`;
}

export const LOCK_BACKEND_OPTION_REFUSED =
  'LockTable option "backend" must have an acquire(resources, owner, signal) method';

export function lockOwnerNotObjectMessage(shown: string): string {
  return (
    'lock owner must be an object with a "label" string, e.g. { kind: "job", jobId: 3, label: "npm run dev" }; ' +
    `received ${shown}`
  );
}

export function lockOwnerLabelMessage(shownLabel: string): string {
  return `lock owner needs a non-empty "label" string (shown in lock messages); received label ${shownLabel}`;
}

export function acquireOptionsNotObjectMessage(shown: string): string {
  return `acquire options must be an object; received ${shown}`;
}

const ACQUIRE_OPTION_ACCEPTS = { signal: 'an AbortSignal', wait: 'a boolean' } as const;

export function acquireOptionMessage(option: keyof typeof ACQUIRE_OPTION_ACCEPTS, shown: string): string {
  return `option "${option}" must be ${ACQUIRE_OPTION_ACCEPTS[option]}; received ${shown}`;
}

/** How the integer check names `timeoutMs`, so its message also says what Infinity means. */
export const ACQUIRE_TIMEOUT_OPTION = 'option "timeoutMs" (milliseconds; Infinity waits for ever)';

/** BadResourceError: `shown` is the received value, `reason` one of badResourceReason. */
export function badResourceMessage(shown: string, reason: string, maxLength: number): string {
  return (
    `bad lock resource ${shown}: ${reason}; expected "kind:value": kind made of lowercase letters, digits and ` +
    `"-", value non-empty without NUL or newline, at most ${maxLength} characters in all; ` +
    'a path: value must be absolute (e.g. "path:/repo/node_modules")'
  );
}

/** Why a resource is refused; also kept as the error's `details.reason`. */
export const badResourceReason = {
  notString: (type: string) => `a resource must be a string, got ${type}`,
  empty: 'it is empty',
  tooLong: (length: number, max: number) => `it is ${length} characters long, more than ${max}`,
  noColon: 'it has no ":" between kind and value',
  emptyKind: 'the kind before ":" is empty',
  badKind: (kind: string) =>
    `the kind ${JSON.stringify(kind)} may only contain lowercase letters, digits and "-"`,
  emptyValue: 'the value after ":" is empty',
  forbidden: (char: '\0' | '\n' | '\r', offset: number) =>
    `the value contains ${char === '\0' ? 'a NUL character' : 'a newline'} at offset ${offset}`,
  relativePath: 'a path: value must be an absolute path (start with "/")',
  objectWithoutResource:
    'an object resource needs a "resource" string, as in { resource: "path:/x", mode: "shared" }',
  notSpec: 'a resource must be a "kind:value" string or { resource, mode }',
} as const;

export function badLockModeMessage(shownMode: string, shownResource: string): string {
  return `bad lock mode ${shownMode} for ${shownResource}: mode must be "exclusive" (the default) or "shared"`;
}

/** The resources of a request are not an array; `lone` is the string passed instead, if it was one. */
export function badLockRequestMessage(shown: string, lone: string | undefined): string {
  const hint = lone === undefined ? '' : `; wrap a single resource in an array: [${JSON.stringify(lone)}]`;
  return (
    `bad lock request ${shown}: resources must be an array of "kind:value" strings ` +
    `or { resource, mode } objects${hint}`
  );
}

/** BadLockRuleError for a template whose braces do not parse; `reason` one of ruleTemplateReason. */
export function badRuleTemplateMessage(template: string, rule: string, reason: string): string {
  return (
    `bad lock rule template ${JSON.stringify(template)} for ${JSON.stringify(rule)}: ${reason}; ` +
    'a template is a "kind:value" resource with {name} placeholders, e.g. "worktree:{ref}"'
  );
}

export const ruleTemplateReason = {
  strayClose: (offset: number) => `a "}" at offset ${offset} closes no "{"`,
  unclosed: (offset: number) => `the "{" at offset ${offset} is never closed`,
  notAName: (name: string) =>
    `placeholder ${JSON.stringify(`{${name}}`)} is not a name (letters, digits and "_", not starting with a digit)`,
} as const;

export function ruleTemplateNotStringMessage(shown: string, rule: string): string {
  return (
    `bad lock rule template ${shown} for ${JSON.stringify(rule)}: a template must be a string ` +
    'like "worktree:{ref}" or { resource: "path:{worktree}/node_modules", mode: "shared" }'
  );
}

export function lockRulesNotObjectMessage(shown: string): string {
  return (
    'lock rules must be an object mapping tool or action names to arrays of templates, e.g. ' +
    `{ background: ["worktree:{ref}"] }; received ${shown}`
  );
}

export function lockRulesNotArrayMessage(rule: string, shown: string): string {
  return `lock rules for ${JSON.stringify(rule)} must be an array of templates, e.g. ["worktree:{ref}"]; received ${shown}`;
}

/** `ref="main", worktree (not set by this call)`: the variables a rule could use, with their values. */
export function ruleVariablesText(vars: readonly (readonly [name: string, value: string | number | undefined])[]): string {
  return vars
    .map(([name, value]) => (value === undefined ? `${name} (not set by this call)` : `${name}=${JSON.stringify(value)}`))
    .join(', ');
}

/** BadLockRuleError: a placeholder that is neither standard nor passed (`unknown`), or not set by this call. */
export function rulePlaceholderMessage(
  template: string,
  rule: string,
  placeholder: string,
  unknown: boolean,
  variables: string,
): string {
  const problem = unknown
    ? `uses unknown placeholder {${placeholder}}`
    : `needs {${placeholder}}, which this call does not provide`;
  return `lock rule template ${JSON.stringify(template)} for ${JSON.stringify(rule)} ${problem}; variables available: ${variables}`;
}

/** BadResourceError: a rule expanded to a resource that parseResource refused (`inner` says why). */
export function badRuleExpansionMessage(template: string, rule: string, variables: string, inner: string): string {
  return (
    `lock rule template ${JSON.stringify(template)} for ${JSON.stringify(rule)} expanded to a bad resource ` +
    `(variables: ${variables}): ${inner}`
  );
}
