/** Public surface of the resource-lock table (SPEC section 6). */

export {
  LockTable,
  describeBlockers,
  describeOwner,
  type AcquireOptions,
  type Lease,
  type LockBackend,
  type LockBackendHandle,
  type LockBlocker,
  type LeaseInfo,
  type LockHolderInfo,
  type LockOwner,
  type LockTableOptions,
  type LockTableSnapshot,
  type LockWaiterInfo,
} from './lock-table.js';
export {
  MAX_RESOURCE_LENGTH,
  formatResource,
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
