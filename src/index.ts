/** heph-jobs: locked background jobs for an agent runtime. The public API. */
export { JobRuntime } from './runtime/job-runtime.js';
export type { BackgroundInput, StatusOptions, KillOptions, Capabilities, JobEvent } from './runtime/job-runtime.js';
export type { JobRuntimeOptions } from './runtime/options.js';
export type { SupervisorStart } from './runtime/options.js';
export type { Limits } from './runtime/limits.js';
export type { Notify } from './runtime/notify.js';
export type { LimitFacts, LimitMechanism } from './protocol/limits.js';
export { buildListReport, formatElapsed } from './reports/report.js';
export type { JobReport, JobListReport } from './reports/report.js';
export type { JobState, NotifiedFacts, ReportState } from './facts.js';
// What a host takes from runtime.locks for its own actions (README: Resource locks).
export type { AcquireOptions, Lease, LockOwner, LockTable, ResourceSpec } from './locks/index.js';
export { createTools } from './tools/index.js';
export type {
  ApprovalAnswer,
  ApprovalRequest,
  Approver,
  BackgroundToolInput,
  CreateToolsOptions,
  JobKillToolInput,
  JobNotice,
  JobStatusToolInput,
  ToolContext,
  ToolDefinition,
  ToolResult,
  ToolRuntime,
  Tools,
} from './tools/index.js';
export type {
  AnthropicToolDefinition,
  FlavorDefinitions,
  FlavorSchema,
  GeminiFunctionDeclaration,
  McpToolDefinition,
  OpenAIToolDefinition,
  SchemaFlavor,
} from './tools/flavors.js';
export type { ContainmentChoice, ContainmentMode, Containment, SignalName, OutputLine, OutputRead as OutputSnapshot } from './protocol/messages.js';
export {
  HephError,
  InvalidInputError,
  JobNotFoundError,
  JobLimitError,
  SpawnError,
  SupervisorLostError,
  ProtocolError,
  RuntimeClosedError,
  RemoteError,
  LockError,
  BadResourceError,
  BadLockRuleError,
  LockTimeoutError,
  LockCancelledError,
  LockBusyError,
  LockSyncUnavailableError,
} from './protocol/errors.js';
export type { ErrorCode, HephErrorOptions } from './protocol/errors.js';
