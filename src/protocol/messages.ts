/**
 * Every message that crosses the channel between the runtime and its supervisor, defined once.
 *
 * `REQUESTS` is the table: one shape per request type. The request types are derived from it
 * (`Request<T>`), the supervisor checks every request against it (`requestProblem`), and
 * `Replies` says what each request is answered with, so a caller of `request('spawn', ...)` gets a
 * `SpawnReply` without a cast. Requests carry an `id` and get exactly one reply with that id;
 * events carry none. The few requests in `ONE_WAY` may also be sent without an id: they are
 * checked and served the same way and never answered.
 */
import type { SerializedError } from './errors.js';
import { BOOT_PATTERN, START_PATTERN, type SupervisorIdentity } from './identity.js';
import type { OutputRead } from './output.js';
import {
  array,
  boolean,
  bytes,
  integer,
  matching,
  nullable,
  object,
  oneOf,
  optional,
  shapeProblem,
  string,
  type ObjectShape,
  type ShapeType,
} from './shape.js';
import type { JobStats } from './stats.js';
import type { LimitFacts, LimitKind, LimitMechanism } from './limits.js';

export const CONTAINMENT_CHOICES = ['auto', 'cgroup', 'process-group'] as const;
/** Where the supervisor spawns a job's leader (supervisor/jobs/leader-spawn.ts); `auto` picks per spawn. */
export const SPAWN_PLACEMENTS = ['auto', 'inline', 'threads'] as const;
export const SIGNAL_NAMES = ['INT', 'TERM', 'KILL'] as const;
export const LOCK_MODES = ['exclusive', 'shared'] as const;
/** Tests only: `watchdog` leaves every limit to the supervisor's watchdog, as where no controller is writable. */
export const LIMITS_BY = ['auto', 'watchdog'] as const;
/**
 * What a supervisor does with the lock vault (supervisor/locks/vault.ts) given its stdin: `create`
 * it (stdin is a fresh carrier socket the runtime holds the other end of), `inherit` it (stdin is
 * the runtime's end of the carrier an earlier supervisor filled), or `none` (no vault).
 */
export const VAULT_MODES = ['none', 'create', 'inherit'] as const;

export type ContainmentChoice = (typeof CONTAINMENT_CHOICES)[number];
export type ContainmentMode = Exclude<ContainmentChoice, 'auto'>;
export type SpawnPlacement = (typeof SPAWN_PLACEMENTS)[number];
export type SignalName = (typeof SIGNAL_NAMES)[number];
export type VaultMode = (typeof VAULT_MODES)[number];

const supervisorConfig = object({
  /** Directory of the lock files: its missing levels made 0700, every level checked (supervisor/locks/lock-dir.ts); a private one is used when it is not safe. */
  lockDir: string(),
  containment: oneOf(CONTAINMENT_CHOICES),
  /** Override for the cgroup v2 directory under which the supervisor makes its subtree (tests). */
  cgroupParent: nullable(string()),
  /** Switches only tests set: the fork path instead of clone3, where leaders are spawned. */
  testing: optional(object({ forceFork: boolean(), spawnOn: oneOf(SPAWN_PLACEMENTS), limitsBy: oneOf(LIMITS_BY) })),
  killGraceMs: integer(0),
  /** The memory of all jobs together (supervisor/limits/all-jobs.ts); over it, the largest job is stopped. */
  allJobsMemoryBytes: optional(integer(1)),
  /** How long output is still drained after a job's processes are gone. */
  drainMs: integer(0),
  output: object({ maxLines: integer(1), maxLineBytes: integer(1), maxBytes: integer(1), headLines: integer(0) }),
});

const jobLimits = object({ memoryBytes: nullable(integer(1)), processes: nullable(integer(1)), cpuMillis: nullable(integer(1)) });

const lockResource = object({ resource: string(), kind: string(), value: string(), mode: oneOf(LOCK_MODES) });

/**
 * A wait before a read (job_status / background with a wait): answered when the job has ended
 * (its leader exited, then at most `drainMs` more for its cleanup and the last output), when an
 * output line after `from` matches `until` (`from` absent: lines from the moment the request
 * arrives on, the unfinished last line included; -1: from the first line), or after `ms`.
 * Without `until` only the end counts. With `port`, also when a process of the job listens on
 * that TCP port (checked at once, then on a short interval while the wait lasts).
 */
const readWait = object({
  ms: integer(0),
  until: optional(object({ source: string(), flags: string() })),
  from: optional(integer(-1)),
  port: optional(integer(1)),
});

/**
 * A notify watch on a job's output (supervisor/requests/notify.ts): told, as `notified` events,
 * of each complete line after `from` (absent: from the moment it arrives; -1: from the first line)
 * that matches `until`, and once when a process of the job listens on `port`. `watch` is the
 * runtime's number for it; the watch lasts until the job's last output is read.
 */
const notifyWatch = object({
  watch: integer(0),
  until: optional(object({ source: string(), flags: string() })),
  port: optional(integer(1)),
  from: optional(integer(-1)),
});

/** `NAME=value`: a name with neither `=` nor NUL, a value without NUL (what execve can carry). */
const envEntry = matching(/^[^=\0]+=[^\0]*$/, 'a NAME=value entry (no NUL, no = in the name)');
const envName = matching(/^[^=\0]+$/, 'a variable name (no NUL, no =)');

const startTime = matching(START_PATTERN, 'a start time (decimal digits, as /proc prints it)');

/** One supervisor instance (src/protocol/identity.ts). */
const supervisorIdentity = object({
  pid: integer(1),
  start: startTime,
  boot: matching(BOOT_PATTERN, 'a boot id (a UUID, as /proc/sys/kernel/random/boot_id prints it)'),
});

/** What the supervisor of a dead supervisor's jobs is asked to stop (see `cleanup-lost`). */
const lostJob = object({
  /** The leader's pid while it was not yet reaped (its process group is then still the job's). */
  pid: nullable(integer(1)),
  /** The leader's start time (from the spawn reply): the group is signalled only while that pid
   * still names that process. */
  start: nullable(startTime),
  cgroup: nullable(string()),
});

export const REQUESTS = {
  hello: object({ config: supervisorConfig, vault: optional(oneOf(VAULT_MODES)) }),
  spawn: object({
    params: object({
      job: integer(0),
      command: string(),
      cwd: string(),
      /** `KEY=value` entries: the whole environment, or with `envBase` what differs from that base. */
      env: array(envEntry),
      /** The version of the base environment (see `environment`) the job's environment starts from: that base,
       * less the names in `envUnset`, with `env`'s entries set over it. */
      envBase: optional(integer(1)),
      envUnset: optional(array(envName)),
      stdin: boolean(),
      merge: boolean(),
      /** On a pseudo-terminal: one stream; the terminal is stdin, stdout and stderr. */
      tty: optional(boolean()),
      shell: string(),
      /** The job's limits (src/protocol/limits.ts), the host's and the call's already combined. */
      limits: optional(jobLimits),
      /** Watches that start with the job, from its first line on. */
      notify: optional(array(notifyWatch)),
    }),
  }),
  /**
   * The base environment later spawns refer to by `version` (replacing any earlier one), so a
   * spawn carries only what differs from it: reading, encoding and decoding a whole environment
   * on every spawn was a sixth of the call (bench: spawn).
   */
  environment: object({ version: integer(1), entries: array(envEntry) }),
  /**
   * With `read`, the reply carries the job's facts with its stats and that read of its output as
   * they are once the kill is done: the final report in one round trip (README, Benchmarks: Tree kill).
   */
  kill: object({
    params: object({
      job: integer(0),
      signal: oneOf(SIGNAL_NAMES),
      graceMs: integer(0),
      read: optional(object({ tail: integer(0), maxBytes: integer(1) })),
    }),
  }),
  /** A read of the job's output, after an optional wait (one round trip for a whole status). */
  read: object({
    params: object({
      job: integer(0),
      tail: optional(integer(0)),
      since: optional(integer(-1)),
      maxBytes: optional(integer(1)),
      /** With `since`: at most this many lines (a page); the reply's `next` starts the next one. */
      limit: optional(integer(0)),
      /** Only the kept lines that match (supervisor/output/filter.ts): the newest `tail`, or with `limit` the first after `since`. */
      filter: optional(object({ source: string(), flags: string() })),
      wait: optional(readWait),
    }),
  }),
  /** Adds a watch to a running job (a job ended or unknown is refused). */
  notify: object({ job: integer(0), watch: notifyWatch }),
  /** What the job is now (no read). */
  facts: object({ job: integer(0) }),
  /** Drops a finished job's record and output (one way, see ONE_WAY, as the runtime sends it). */
  forget: object({ job: integer(0) }),
  write: object({ job: integer(0), data: bytes(), close: boolean() }),
  lock: object({
    lease: integer(0),
    resources: array(lockResource),
    owner: object({ label: string(), job: nullable(integer(0)) }),
  }),
  unlock: object({ lease: integer(0) }),
  /**
   * Sent to a fresh supervisor after the previous one died: stop every remaining process of the
   * dead one's jobs (their cgroups, the process groups of leaders not yet reaped, processes
   * carrying its marker) and remove its cgroup tree. Answered once all is gone (or a deadline).
   */
  'cleanup-lost': object({
    supervisor: supervisorIdentity,
    jobs: array(lostJob),
  }),
  /** What the supervisor process has loaded (tests prove child_process never is). */
  diagnostics: object({}),
  ping: object({}),
  /** What holds each kind of job limit here: looked up (a mkdir per v1 hierarchy) only when asked. */
  'limit-mechanisms': object({}),
  shutdown: object({}),
} as const satisfies Record<string, ObjectShape>;

export type RequestType = keyof typeof REQUESTS;
/** The fields of a request of type T, without id and type. */
export type RequestBody<T extends RequestType> = ShapeType<(typeof REQUESTS)[T]>;
/** A request as its handler sees it: its type and fields, no id (a one-way request has none). */
export type RequestFields<T extends RequestType = RequestType> = T extends RequestType ? { type: T } & RequestBody<T> : never;
export type Request<T extends RequestType = RequestType> = T extends RequestType ? { id: number } & RequestFields<T> : never;

/**
 * Requests that may be sent one way: without an id, never answered, so the sender neither waits
 * nor reads a reply. Only requests whose reply is null and whose refusal the sender has no use
 * for: the runtime forgets every evicted job this way, where a round trip per finished job was
 * encoding, decoding and a wake-up on both sides for a reply nobody read (bench: throughput). A
 * one-way request that is refused (by its shape, or by its handler) is reported as a
 * protocol-error event naming it, as a frame without an id always is.
 */
export const ONE_WAY = ['forget'] as const satisfies readonly RequestType[];
export type OneWayType = (typeof ONE_WAY)[number];

export type SupervisorConfig = RequestBody<'hello'>['config'];
/** The hello's `testing` block: switches only tests set. */
export type TestSwitches = NonNullable<SupervisorConfig['testing']>;
export type SpawnParams = RequestBody<'spawn'>['params'];
export type KillParams = RequestBody<'kill'>['params'];
export type ReadParams = RequestBody<'read'>['params'];
export type ReadWait = NonNullable<ReadParams['wait']>;
export type LockResource = RequestBody<'lock'>['resources'][number];
export type NotifyWatch = RequestBody<'notify'>['watch'];
export type LostJob = RequestBody<'cleanup-lost'>['jobs'][number];

export interface Containment {
  mode: ContainmentMode;
  /** The supervisor's cgroup subtree, when mode is 'cgroup'. */
  cgroupRoot: string | null;
  /** Why this mode: what was detected, or why cgroups could not be used. */
  reason: string;
}

/**
 * Why a lock directory was not used (supervisor/locks/lock-dir.ts): `level` is the path that
 * failed its check. `symlink`: a symlink whose owner (`uid`) is neither root nor us; `owner`: a
 * level owned by `uid`, neither root nor us (the lock directory itself: not us); `writable`: a level
 * others may write to without the sticky bit (`mode`); `access`: the lock directory grants group
 * or other users access (`mode`); `not-directory`: something else is there; `changed`: the level
 * changed while it was being checked; `loop`: too many symlinks; `error`: a system call failed
 * (`detail`).
 */
export interface LockDirProblem {
  level: string;
  reason: 'symlink' | 'owner' | 'writable' | 'access' | 'not-directory' | 'changed' | 'loop' | 'error';
  uid?: number;
  mode?: number;
  detail?: string;
}

/** Where the supervisor keeps its lock files. */
export interface LockDirInfo {
  /** The directory in use. */
  dir: string;
  /** The configured (or default) directory, when it was not safe and a private one is used instead. */
  refused: { dir: string; problem: LockDirProblem } | null;
}

export interface HelloReply {
  pid: number;
  /** This supervisor instance: how the runtime names it in `cleanup-lost` should it die. */
  instance: SupervisorIdentity;
  containment: Containment;
  subreaper: boolean;
  locks: LockDirInfo;
  /**
   * The lock vault: `created`, `inherited` (then `adopted` lists the leases of a dead supervisor of
   * this runtime whose locks were kept all along and are now held by this one), `missing` (asked to
   * inherit, but the carrier held no vault) or `none`.
   */
  vault: { state: 'none' | 'created' | 'inherited' | 'missing'; adopted: number[] };
}

export interface SpawnReply {
  pid: number;
  /** The leader's start time (null if it was reaped before it could be read). */
  start: string | null;
  cgroup: string | null;
  method: 'clone3' | 'fork';
  startedAt: number;
}

/** The supervisor's view of one job's processes. */
export interface JobFacts {
  job: number;
  pid: number;
  cgroup: string | null;
  /** Leader exit, once reaped. */
  exit: LeaderExit | null;
  /** True once every process of the job is gone and reaped and its cgroup removed. */
  cleanedUp: boolean;
  /** Processes of the job still alive (leader included). */
  procs: number;
  /** Whether the job has a stdin pipe still open. */
  stdinOpen: boolean;
  /** CPU, memory, processes and listening ports while the job runs; null once done. */
  stats: JobStats | null;
  /** Its limits, how each is held and what they did; null when it has none. */
  limits: LimitFacts | null;
}

/** How a wait before a read ended. `line` is the matching line's text; `listening`: the job listens on the wait's port. */
export interface WaitResult {
  kind: 'ended' | 'matched' | 'timed-out' | 'listening';
  waitedMs: number;
  line?: string;
}

export interface ReadReply {
  output: OutputRead;
  facts: JobFacts;
  /** Present when the read asked for a wait. */
  waited?: WaitResult;
}

/** What a write to a job's input did: `written` of `bytes` went in; `stalled`: the job read none of the rest in time, so it was not sent. */
export interface InputWrite {
  bytes: number;
  written: number;
  stalled: boolean;
  /** How long the write took, to its end or until it gave up. */
  waitedMs: number;
}

/** A write's answer: the job, what went in, and whether the end of input was sent (when asked). */
export interface WriteReply {
  facts: JobFacts;
  input: InputWrite;
  closed: boolean;
}

/** A kill's answer: the job once cleaned up (or, for INT, once the grace is over), and the read it asked for. */
export interface KillReply {
  facts: JobFacts;
  /** Present when the kill asked for a read. */
  output?: OutputRead;
}

/** What each request is answered with. */
export interface Replies {
  hello: HelloReply;
  spawn: SpawnReply;
  environment: null;
  kill: KillReply;
  read: ReadReply;
  facts: JobFacts;
  notify: null;
  forget: null;
  write: WriteReply;
  lock: null;
  unlock: null;
  'cleanup-lost': null;
  /** codeCache: how the supervisor bundle was compiled (supervisor/code-cache.ts). */
  diagnostics: { moduleLoadList: string[]; codeCache: 'accepted' | 'rejected' | 'none'; spawnsOnThreads: number };
  ping: { pid: number };
  'limit-mechanisms': Record<LimitKind, LimitMechanism | null>;
  shutdown: null;
}

// Every request type has a reply type and no reply type lacks a request (a compile-time check).
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;
const repliesCoverRequests: SameKeys<Replies, typeof REQUESTS> = true;
void repliesCoverRequests;
// A one-way request is one whose reply carries nothing (a compile-time check).
const oneWayRepliesAreNull: Replies[OneWayType] extends null ? true : false = true;
void oneWayRepliesAreNull;

export type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: SerializedError };

/** How a job's leader ended, and when. */
export interface LeaderExit {
  /** The job's limits as they are at its exit (a limit reached before it), when it has any. */
  limits?: LimitFacts;
  code: number | null;
  signal: string | null;
  at: number;
}

export type SupervisorEvent =
  | ({ event: 'exited'; job: number } & LeaderExit)
  /**
   * Every process is gone and reaped, the cgroup removed, the last output read. With `exit`: the
   * leader's exit, not told by an 'exited' event before (both were ready in one turn, as for most
   * short jobs, and go as one event: supervisor/requests/end-events.ts). `lines`: its output's
   * lines in all, final now (a notice counts the unread ones without a read).
   */
  | { event: 'cleaned-up'; job: number; at: number; lines: number; exit?: LeaderExit; limits?: LimitFacts }
  /**
   * A watch's matches: the first complete line of a burst that matched (`seq`, `line`, cut to
   * NOTIFY_LINE_CHARS), how many lines of the burst matched (`count`) out of how many were read
   * (`scanned`); or, with `listening`, the job listens on the watch's port.
   */
  | { event: 'notified'; job: number; watch: number; count: number; scanned: number; seq?: number; line?: string; listening?: true }
  | { event: 'protocol-error'; message: string };

export type Incoming = Reply | SupervisorEvent;

/** An envelope every request has: a safe-integer id and a string type. */
export function isEnvelope(value: unknown): value is { id: number; type: string } {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as { id?: unknown; type?: unknown };
  return typeof record.id === 'number' && Number.isSafeInteger(record.id) && typeof record.type === 'string';
}

export function isRequestType(type: string): type is RequestType {
  return Object.prototype.hasOwnProperty.call(REQUESTS, type);
}

/** A one-way request's envelope: no id at all (absent, or nil as msgpack may send it) and a type in ONE_WAY. */
export function isOneWayEnvelope(value: unknown): value is { type: OneWayType } {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as { id?: unknown; type?: unknown };
  return (record.id === undefined || record.id === null) && (ONE_WAY as readonly unknown[]).includes(record.type);
}

/** The first problem of a known request's fields, as "request T: field must be ...", or null. */
export function requestProblem(request: { type: RequestType } & Record<string, unknown>): string | null {
  const problem = shapeProblem(REQUESTS[request.type], request, '');
  return problem === null ? null : `request ${request.type}: ${problem}`;
}

/** One line of a job's output, and one read of it: defined by the supervisor's ring, which
 * produces them, and sent over the channel as they are. */
export type { OutputLine, OutputRead, StreamName } from './output.js';
export type { JobStats } from './stats.js';
export type { SupervisorIdentity } from './identity.js';
