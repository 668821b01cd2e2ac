/**
 * An AI SDK `Experimental_SandboxSession` whose commands are heph-jobs jobs: what a tool runs
 * through `experimental_sandbox.run()` / `.spawn()` (generateText's, streamText's or a
 * ToolLoopAgent's `experimental_sandbox`) is contained with every process it starts, holds the
 * session's locks while it runs, and is cleaned up when it ends, is killed, its call is aborted,
 * the session is destroyed or the runtime closes.
 *
 * - A process's `pid` is its job number, the one heph-jobs' own tools take (`job_status {"id"}`).
 * - stdout and stderr are the job's output, read line by line as it comes (each line with its
 *   newline; an unfinished line, a prompt, as it grows) and encoded as UTF-8: text, not raw bytes.
 *   What a job's ring dropped before it was read (more than its 2000 lines at once) is not seen.
 * - `kill()` stops the job as job_kill does (SIGTERM, the runtime's grace, SIGKILL) and resolves
 *   once every process of it is gone. A job ended by a signal exits with 128 + its number (one
 *   killed while it waited for its locks, with 143); one stopped by the session's `timeoutMs`, with 124. An aborted call kills its job, and `wait()`
 *   (or `run()`) rejects with the abort reason once the job is gone.
 * - With `locks`, `spawn()` returns at once with the job waiting for them; its output starts, and
 *   its stdin is written, once it runs.
 * - The file methods work on this machine's files, a relative path from the session's working
 *   directory (the one its commands start in), with Node's fs: no job, no lock, no containment.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Experimental_SandboxDirectoryEntry, Experimental_SandboxFileStat, Experimental_SandboxProcess, Experimental_SandboxSession } from 'ai';
import type { ResourceSpec } from '../locks/index.js';
import type { JobReport } from '../reports/report.js';
import type { JobRuntime } from '../runtime/job-runtime.js';
import type { Limits } from '../runtime/limits.js';
import { toolPortOf } from '../runtime/tool-port.js';
import { adapterConfig } from '../wording/index.js';
import { ENDED_STATES, followOutput, jobReport, untilState } from './job-output.js';

type RunOptions = Parameters<Experimental_SandboxSession['run']>[0];
type RunResult = Awaited<ReturnType<Experimental_SandboxSession['run']>>;
/** The widest of spawn's overloads: `stdin` true or not. */
type SpawnOptions = Parameters<Experimental_SandboxSession['spawn']>[0];
type PathOptions = Parameters<Experimental_SandboxSession['stat']>[0];
type ReadTextOptions = Parameters<Experimental_SandboxSession['readTextFile']>[0];
type WriteStreamOptions = Parameters<Experimental_SandboxSession['writeFile']>[0];
type WriteBytesOptions = Parameters<Experimental_SandboxSession['writeBinaryFile']>[0];
type WriteTextOptions = Parameters<Experimental_SandboxSession['writeTextFile']>[0];

export interface HephJobsSandboxOptions {
  /** The directory commands start in and relative paths resolve from. Default: the runtime's cwd. */
  workingDirectory?: string;
  /** Variables every command gets on top of the runtime's environment (a command's own `env` wins; undefined unsets). */
  env?: Record<string, string | undefined>;
  /** Locks every command holds while it runs (`port:5173`, `path:/repo`): a second waits for the first. Default: none. */
  locks?: readonly ResourceSpec[];
  /** Stop each command after this many ms (it exits with 124). Default: no limit. */
  timeoutMs?: number;
  /** Every command's limits (memory, CPU, processes), within the runtime's. Default: the runtime's. */
  limits?: Limits;
  /** The ref (branch/worktree name) the commands belong to, for heph-jobs' messages. */
  ref?: string;
  /** The session's `description`, for the agent's instructions. Default: where commands run and how they are contained. */
  description?: string;
}

/** A process of the session: a heph-jobs job. */
export interface HephJobsSandboxProcess extends Experimental_SandboxProcess {
  /** The job's number, as heph-jobs' tools take it (`job_status {"id": pid}`). */
  readonly pid: number;
  /** With `spawn({ stdin: true })`: the job's stdin (closing it sends EOF, the job runs on). */
  readonly stdin?: WritableStream<Uint8Array>;
  /** Resolves with the exit code once the job has ended and its output is read; rejects with the abort reason after an abort, or when the job never ran. */
  wait(): Promise<{ exitCode: number }>;
  /** Stops the job and everything it started; resolves once all of it is gone. Idempotent. */
  kill(): Promise<void>;
}

/** The stdout or stderr of a job, as a byte stream the job's lines are pushed into. */
class OutputStream {
  readonly stream: ReadableStream<Uint8Array>;
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  private open = true;
  private readonly encoder = new TextEncoder();

  constructor() {
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller;
      },
      // A reader that cancels wants no more: nothing is kept for it.
      cancel: () => {
        this.open = false;
      },
    });
  }

  push(text: string): void {
    if (this.open && text !== '') this.controller!.enqueue(this.encoder.encode(text));
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.controller!.close();
  }
}

/** A job of the session, as the SDK's process handle. */
class JobProcess implements HephJobsSandboxProcess {
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly stdin?: WritableStream<Uint8Array>;
  private readonly out = new OutputStream();
  private readonly err = new OutputStream();
  private readonly ended: Promise<{ exitCode: number }>;
  private stopping: Promise<void> | null = null;
  private aborted: { reason: unknown } | null = null;

  constructor(
    private readonly runtime: JobRuntime,
    readonly pid: number,
    stdin: boolean,
    abortSignal: AbortSignal | undefined,
    onEnd: () => void,
  ) {
    this.stdout = this.out.stream;
    this.stderr = this.err.stream;
    if (stdin) this.stdin = this.stdinStream();
    const onAbort = () => {
      this.aborted = { reason: abortSignal!.reason };
      void this.kill().catch(() => undefined);
    };
    // An abort while the job was being started has fired already: its job is stopped all the same.
    if (abortSignal?.aborted) onAbort();
    else abortSignal?.addEventListener('abort', onAbort, { once: true });
    this.ended = this.follow()
      .then(async (report) => {
        if (this.aborted) {
          await this.stopping;
          throw this.aborted.reason;
        }
        // A job killed before its locks let it start never ran: it ends as a killed one does.
        if (report?.state === 'cancelled' && this.stopping !== null) return { exitCode: 128 + os.constants.signals.SIGTERM };
        return { exitCode: exitCodeOf(report) };
      })
      .finally(() => {
        abortSignal?.removeEventListener('abort', onAbort);
        onEnd();
      });
    // A caller that never waits must not leave a rejection unhandled.
    this.ended.catch(() => undefined);
  }

  wait(): Promise<{ exitCode: number }> {
    return this.ended;
  }

  kill(): Promise<void> {
    this.stopping ??= this.stop();
    return this.stopping;
  }

  private async stop(): Promise<void> {
    const state = this.state();
    if (state === undefined || (ENDED_STATES.has(state) && this.report()?.cleanedUp)) return;
    try {
      await this.runtime.kill(this.pid);
    } catch (error) {
      // Ended and forgotten meanwhile: nothing is left to stop.
      if (this.state() !== undefined) throw error;
    }
  }

  private report(): JobReport | undefined {
    return jobReport(this.runtime, this.pid);
  }

  private state(): string | undefined {
    return this.report()?.state;
  }

  /** Writes go to the job once it runs; the bytes are sent as UTF-8 text (a character split between writes is joined). */
  private stdinStream(): WritableStream<Uint8Array> {
    const decoder = new TextDecoder();
    const started = () => this.until((state) => state !== 'waiting');
    return new WritableStream<Uint8Array>({
      write: async (chunk) => {
        await started();
        const text = decoder.decode(chunk, { stream: true });
        if (text !== '') await this.runtime.input(this.pid, { text });
      },
      close: async () => {
        await started();
        const rest = decoder.decode();
        await this.runtime.input(this.pid, { ...(rest === '' ? {} : { text: rest }), close: true });
      },
      abort: async () => {
        await started();
        await this.runtime.input(this.pid, { close: true }).catch(() => undefined);
      },
    });
  }

  /** Passes the job's output on as it comes; resolves with the job's last report once it has ended and all of it is read (null: the job is gone). */
  private async follow(): Promise<JobReport | null> {
    try {
      return (await followOutput(this.runtime, this.pid, (stream, data) => (stream === 'stderr' ? this.err : this.out).push(data))).report;
    } finally {
      this.out.close();
      this.err.close();
    }
  }

  private until(ready: (state: string | undefined) => boolean): Promise<void> {
    return untilState(this.runtime, this.pid, ready);
  }

}

/**
 * A SandboxSession of the AI SDK over a heph-jobs runtime (the host's, which it starts and
 * closes): `run()` and `spawn()` start jobs, the file methods use this machine's files.
 * `destroy()` stops the jobs it started.
 */
export class HephJobsSandboxSession implements Experimental_SandboxSession {
  readonly description: string;
  /** The directory commands start in and relative paths resolve from. */
  readonly workingDirectory: string;
  private readonly live = new Set<JobProcess>();

  constructor(
    private readonly runtime: JobRuntime,
    private readonly options: HephJobsSandboxOptions = {},
  ) {
    const { timeoutMs } = options;
    if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1)) {
      throw new TypeError(adapterConfig.badTimeout(timeoutMs));
    }
    this.workingDirectory = path.resolve(options.workingDirectory ?? toolPortOf(runtime).settings.cwd);
    this.description =
      options.description ??
      `Commands run on this machine (${os.platform()}) in ${this.workingDirectory} unless told otherwise; each runs as a heph-jobs job, ` +
        'stopped together with every process it started when it ends or is killed. Files are this machine\'s; relative paths start in that directory.';
  }

  spawn(options: SpawnOptions & { stdin: true }): Promise<HephJobsSandboxProcess & { readonly stdin: WritableStream<Uint8Array> }>;
  spawn(options: SpawnOptions & { stdin?: false }): Promise<HephJobsSandboxProcess>;
  spawn(options: SpawnOptions): Promise<HephJobsSandboxProcess>;
  async spawn(options: SpawnOptions): Promise<HephJobsSandboxProcess> {
    const { command, workingDirectory, env, abortSignal, stdin = false } = options;
    abortSignal?.throwIfAborted();
    const { settings } = toolPortOf(this.runtime);
    const added = { ...this.options.env, ...env };
    const { locks, timeoutMs, limits, ref } = this.options;
    const report = await this.runtime.background({
      command,
      cwd: workingDirectory === undefined ? this.workingDirectory : path.resolve(this.workingDirectory, workingDirectory),
      ...(Object.keys(added).length === 0 ? {} : { env: withoutUnset({ ...settings.env, ...added }) }),
      stdin,
      waitMs: 0,
      ...(locks === undefined || locks.length === 0 ? {} : { locks, answerWithinMs: 0 }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(limits === undefined ? {} : { limits }),
      ...(ref === undefined ? {} : { ref }),
    });
    if (report.state === 'failed' || report.state === 'cancelled' || report.state === 'lost') throw new Error(report.reason ?? report.text);
    const handle: JobProcess = new JobProcess(this.runtime, report.id, stdin, abortSignal, () => this.live.delete(handle));
    this.live.add(handle);
    return handle;
  }

  async run(options: RunOptions): Promise<RunResult> {
    const { maxOutputLength, ...spawn } = options;
    if (maxOutputLength !== undefined && (!Number.isSafeInteger(maxOutputLength) || maxOutputLength < 1)) {
      throw new TypeError(adapterConfig.badMaxOutput(maxOutputLength));
    }
    const handle = await this.spawn({ ...spawn, stdin: false });
    const [stdout, stderr] = await Promise.all([collectText(handle.stdout, maxOutputLength), collectText(handle.stderr, maxOutputLength)]);
    const { exitCode } = await handle.wait();
    return {
      exitCode,
      stdout: stdout.text,
      stderr: stderr.text,
      ...(maxOutputLength === undefined ? {} : { stdoutLength: stdout.length, stderrLength: stderr.length }),
    };
  }

  /** Stops every command of this session that still runs; resolves once all of them are gone. */
  async destroy(): Promise<void> {
    await Promise.all([...this.live].map((handle) => handle.kill().catch(() => undefined)));
  }

  async readFile({ path: file, abortSignal }: PathOptions): Promise<ReadableStream<Uint8Array> | null> {
    abortSignal?.throwIfAborted();
    const where = this.resolve(file);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(where, 'r');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    try {
      if ((await handle.stat()).isDirectory()) throw fsError('EISDIR', `${where} is a directory`);
    } catch (error) {
      await handle.close();
      throw error;
    }
    const stream = handle.createReadStream(abortSignal ? { signal: abortSignal } : {});
    return Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>;
  }

  async readBinaryFile({ path: file, abortSignal }: PathOptions): Promise<Uint8Array | null> {
    abortSignal?.throwIfAborted();
    try {
      const bytes = await fsp.readFile(this.resolve(file), abortSignal ? { signal: abortSignal } : {});
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async readTextFile({ path: file, encoding = 'utf-8', startLine, endLine, abortSignal }: ReadTextOptions): Promise<string | null> {
    const decoder = new TextDecoder(encoding);
    const bytes = await this.readBinaryFile({ path: file, ...(abortSignal ? { abortSignal } : {}) });
    return bytes === null ? null : lineRange(decoder.decode(bytes), startLine, endLine);
  }

  async writeFile({ path: file, content, abortSignal }: WriteStreamOptions): Promise<void> {
    abortSignal?.throwIfAborted();
    const where = await this.parentMade(file);
    const source = Readable.fromWeb(content as unknown as NodeReadableStream<Uint8Array>);
    await pipeline(source, fs.createWriteStream(where), abortSignal ? { signal: abortSignal } : {});
  }

  async writeBinaryFile({ path: file, content, abortSignal }: WriteBytesOptions): Promise<void> {
    abortSignal?.throwIfAborted();
    await fsp.writeFile(await this.parentMade(file), content, abortSignal ? { signal: abortSignal } : {});
  }

  async writeTextFile({ path: file, content, encoding = 'utf-8', abortSignal }: WriteTextOptions): Promise<void> {
    if (!Buffer.isEncoding(encoding)) throw new RangeError(`writeTextFile cannot encode ${JSON.stringify(encoding)}: it takes one of Node's encodings (utf-8, utf-16le, latin1, ascii, base64, hex)`);
    await this.writeBinaryFile({ path: file, content: Buffer.from(content, encoding), ...(abortSignal ? { abortSignal } : {}) });
  }

  async stat({ path: file, abortSignal }: PathOptions): Promise<Experimental_SandboxFileStat | null> {
    abortSignal?.throwIfAborted();
    try {
      const stats = await fsp.stat(this.resolve(file));
      return { type: stats.isFile() ? 'file' : stats.isDirectory() ? 'directory' : 'other', size: stats.size };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  async listDirectory({ path: dir, abortSignal }: PathOptions): Promise<Experimental_SandboxDirectoryEntry[] | null> {
    abortSignal?.throwIfAborted();
    try {
      const entries = await fsp.readdir(this.resolve(dir), { withFileTypes: true });
      return entries.map((entry) => ({
        name: entry.name,
        type: entry.isSymbolicLink() ? 'symlink' : entry.isFile() ? 'file' : entry.isDirectory() ? 'directory' : 'other',
      }));
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    }
  }

  async deleteFile({ path: file, abortSignal }: PathOptions): Promise<boolean> {
    abortSignal?.throwIfAborted();
    const where = this.resolve(file);
    try {
      if ((await fsp.lstat(where)).isDirectory()) throw fsError('EISDIR', `${where} is a directory; deleteFile deletes files`);
      await fsp.unlink(where);
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  private resolve(file: string): string {
    return path.resolve(this.workingDirectory, file);
  }

  /** `file` resolved, its parent directories made. */
  private async parentMade(file: string): Promise<string> {
    const where = this.resolve(file);
    await fsp.mkdir(path.dirname(where), { recursive: true });
    return where;
  }
}

/** The exit code of an ended job as a shell gives it; throws when the job never ran, or is gone. */
function exitCodeOf(report: JobReport | null): number {
  if (report?.state === 'exited') return report.exitCode ?? 0;
  if (report?.state === 'killed') {
    if (report.timedOutAfterMs != null) return 124;
    return 128 + (os.constants.signals[(report.signal ?? 'SIGKILL') as NodeJS.Signals] ?? 9);
  }
  throw new Error(report === null ? adapterConfig.jobGone() : (report.reason ?? report.text));
}

/** The text of `stream`, at most `max` UTF-16 code units of it kept (the rest read and counted). */
async function collectText(stream: ReadableStream<Uint8Array>, max: number | undefined): Promise<{ text: string; length: number }> {
  const decoder = new TextDecoder();
  let text = '';
  let length = 0;
  const add = (piece: string) => {
    length += piece.length;
    if (max === undefined) text += piece;
    else if (text.length < max) text += piece.slice(0, max - text.length);
  };
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    add(decoder.decode(value, { stream: true }));
  }
  add(decoder.decode());
  return { text, length };
}

/** Lines `startLine` to `endLine` (1-based, inclusive) of `text`, split and joined on its own line ending. */
function lineRange(text: string, startLine: number | undefined, endLine: number | undefined): string {
  if (startLine === undefined && endLine === undefined) return text;
  const ending = text.includes('\r\n') ? '\r\n' : text.includes('\n') ? '\n' : text.includes('\r') ? '\r' : '\n';
  const lines = text.split(ending);
  return lines.slice(Math.max(1, startLine ?? 1) - 1, Math.min(lines.length, endLine ?? lines.length)).join(ending);
}

function errorCode(error: unknown): unknown {
  return error !== null && typeof error === 'object' ? (error as { code?: unknown }).code : undefined;
}

/** No such file: it, or a directory on its way, does not exist. */
function isMissing(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function fsError(code: string, message: string): Error {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}

function withoutUnset(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
