/** Public surface of the resource-lock table (SPEC section 6). */

export { LockTable } from './lock-table.js';
export type {
  AcquireOptions,
  Lease,
  LockBackend,
  LockBackendHandle,
  LockBlocker,
  LeaseInfo,
  LockHolderInfo,
  LockOwner,
  LockTableOptions,
  LockTableSnapshot,
  LockWaiterInfo,
} from './types.js';
// How owners, blockers and resources read in messages; the wording lives with every other sentence.
export { describeBlockers, describeOwner, formatResource } from '../wording/index.js';
export {
  MAX_RESOURCE_LENGTH,
  normalizeResource,
  normalizeResources,
  overlaps,
  parseResource,
  resourcesConflict,
  resourcesOverlap,
  type LockMode,
  type NormalizedResource,
  type ParsedResource,
  type ResourceConflict,
  type ResourceSpec,
} from './resource.js';
export {
  STANDARD_RULE_VARIABLES,
  expandRules,
  validateLockRules,
  type LockRules,
  type RuleTemplate,
  type RuleVars,
} from './rules.js';
export {
  BadLockRuleError,
  BadResourceError,
  LockBusyError,
  LockCancelledError,
  LockError,
  LockSyncUnavailableError,
  LockTimeoutError,
} from '../protocol/errors.js';
