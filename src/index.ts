/** heph-jobs: locked background jobs for an agent runtime. The public API. */
export { JobRuntime } from './runtime.js';
export type { BackgroundInput, StatusOptions, KillOptions, Capabilities, JobEvent } from './runtime.js';
export type { JobRuntimeOptions } from './options.js';
export { buildListReport, formatElapsed } from './reports/report.js';
export type { JobReport, JobListReport, ReportState } from './reports/report.js';
export { createTools } from './tools/index.js';
export type {
  ApprovalAnswer,
  ApprovalRequest,
  Approver,
  BackgroundToolInput,
  CreateToolsOptions,
  JobKillToolInput,
  JobStatusToolInput,
  ToolContext,
  ToolDefinition,
  ToolResult,
  ToolRuntime,
  Tools,
} from './tools/index.js';
export type { JobState } from './job-record.js';
export type { ContainmentChoice, ContainmentMode, Containment, SignalName, OutputLine, OutputSnapshot } from './protocol/messages.js';
export * from './errors.js';
