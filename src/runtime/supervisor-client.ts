/**
 * The runtime's side of the supervisor: starts the process with the channel on an inherited
 * socket (fd 3; never a socket on disk, so no other process can reach it), sends requests, routes
 * replies and events, and notices when the supervisor dies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deserializeError, SupervisorLostError } from '../protocol/errors.js';
import { encodeFrame, FrameReader } from '../protocol/codec.js';
import type { HelloReply, Incoming, OneWayType, Replies, RequestBody, RequestType, SupervisorConfig, SupervisorEvent } from '../protocol/messages.js';

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * The compiled supervisor entry, seen from dist/src/runtime/ (built) or src/runtime/ (tests): the
 * launcher that runs the one-file bundle from its V8 code cache (supervisor/launch.ts), else the
 * bundle itself, else the compiled main.js (each starts faster than the next:
 * scripts/bundle-supervisor.mjs).
 */
export function supervisorEntry(): string {
  const candidates = ['../../supervisor', '../../dist/supervisor'].flatMap((dir) =>
    ['supervisor.launch.cjs', 'supervisor.bundle.cjs', 'main.js'].map((file) => path.resolve(here, dir, file)),
  );
  const found = candidates.find((candidate) => fs.existsSync(candidate));
  if (!found) throw new Error(`heph-jobs: the supervisor entry is not built (run \`npm run build:ts\`); looked in ${candidates.join(', ')}`);
  return found;
}

/**
 * Node and V8 flags for the supervisor: a 1 MB semi-space keeps its short-lived garbage from growing
 * its resident set, and one V8 helper thread one malloc arena (README, Benchmarks: Peak memory).
 */
export const SUPERVISOR_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--v8-pool-size=1'];

/**
 * The supervisor's own environment: the runtime's, less what only slows its boot, plus one malloc
 * arena for all its threads (see SUPERVISOR_NODE_FLAGS). Node 20 reads and parses
 * NODE_EXTRA_CA_CERTS when it starts, before any script runs (a whole CA bundle: ~35 ms, more than
 * half of a bare `node -e 0` on a machine whose environment names one; bench: start), and the
 * supervisor never opens a TLS connection. Jobs are not affected: each gets the environment its
 * spawn request carries, not the supervisor's.
 */
export function supervisorEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _tlsOnly, ...rest } = env;
  return { ...rest, MALLOC_ARENA_MAX: '1' };
}

/** Lines of the supervisor's stderr kept for the "supervisor lost" message. */
const STDERR_TAIL_LINES = 20;

export interface SupervisorClientEvents {
  onEvent(event: SupervisorEvent): void;
  onLost(error: SupervisorLostError, client: SupervisorClient): void;
}

/**
 * How a supervisor gets the lock vault (supervisor/locks/vault.ts), through its stdin: `create`
 * gives it a fresh carrier socket (whose other end the runtime then keeps: `carrier`), `inherit`
 * gives it the runtime's end of a carrier an earlier supervisor filled, `none` gives it nothing.
 */
export type VaultHandoff = { mode: 'none' } | { mode: 'create' } | { mode: 'inherit'; carrier: net.Socket };

/** How long a closed channel waits for the supervisor's exit to be reported, to say how it ended. */
const EXIT_AFTER_CLOSE_MS = 1000;

/** How the supervisor process ended, as a lost error says it. */
function exitText(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal === 'SIGKILL') return 'was killed by SIGKILL (the kernel\'s out-of-memory killer kills so, as does kill -9)';
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

export class SupervisorClient {
  readonly pid: number;
  /**
   * With `create`: the runtime's end of the carrier this supervisor filled with the vault. Never
   * read (Node does not read a child's stdin) and taken off `child.stdin`, so Node does not destroy
   * it when the child exits either: the vault lives as long as this socket does.
   */
  carrier: net.Socket | null = null;
  private readonly child: ChildProcess;
  private readonly socket: net.Socket;
  private readonly reader = new FrameReader();
  private readonly pending = new Map<number, { resolve: (value: never) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  private lost: SupervisorLostError | null = null;
  private closing = false;
  private stderrTail: string[] = [];
  /** Requests sent in this turn go out in one writev when it ends (see send). */
  private corked = false;
  hello: HelloReply | null = null;

  private constructor(child: ChildProcess, private readonly events: SupervisorClientEvents) {
    this.child = child;
    this.pid = child.pid!;
    this.socket = child.stdio[3] as net.Socket;
    this.socket.on('data', (chunk: Buffer) => this.reader.push(chunk, (frame) => {
      if (frame.ok) this.dispatch(frame.value as Incoming);
      else this.markLost(new SupervisorLostError(`the supervisor sent a bad frame: ${frame.message}`));
    }));
    this.socket.on('error', () => {});
    this.socket.on('close', () => this.channelClosed());
    child.on('exit', (code, signal) => this.markLost(this.lostError(exitText(code, signal))));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      this.stderrTail.push(...text.split('\n').filter(Boolean));
      this.stderrTail = this.stderrTail.slice(-STDERR_TAIL_LINES);
    });
    // The supervisor must not keep the runtime alive by itself; pending requests do (see request).
    child.unref();
    this.socket.unref();
    (child.stderr as net.Socket | null)?.unref?.();
  }

  /** `env`: added to the supervisor's environment (tests: HEPH_JOBS_INJECT_FAULT). */
  static async start(config: SupervisorConfig, events: SupervisorClientEvents, vault: VaultHandoff = { mode: 'none' }, env: NodeJS.ProcessEnv = {}): Promise<SupervisorClient> {
    const stdin = vault.mode === 'create' ? 'pipe' : vault.mode === 'inherit' ? vault.carrier : 'ignore';
    const child = spawn(process.execPath, [...SUPERVISOR_NODE_FLAGS, supervisorEntry()], {
      // Its own session and process group: a Ctrl-C at the runtime's terminal must not reach it.
      detached: true,
      stdio: [stdin, 'ignore', 'pipe', 'pipe'],
      env: {
        ...supervisorEnvironment(process.env),
        HEPH_JOBS_PARENT_PID: String(process.pid),
        // msgpackr's optional native extractor loads child_process (through its libc detection,
        // which may even spawn `getconf`); a child spawned by libuv inside the supervisor would
        // race our reaper for its exit status. The pure-JS decoder is fast enough for our frames.
        MSGPACKR_NATIVE_ACCELERATION_DISABLED: 'true',
        ...env,
      },
    });
    if (child.pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      throw new SupervisorLostError(`the supervisor could not be started: ${error.message}`, { cause: error });
    }
    const client = new SupervisorClient(child, events);
    if (vault.mode === 'create') {
      // Ours from now on, not the child's: Node destroys `child.stdin` when the child exits.
      client.carrier = child.stdin as net.Socket;
      child.stdin = null;
      client.carrier.unref();
    }
    try {
      client.hello = await client.request('hello', { config, vault: vault.mode });
    } catch (error) {
      client.carrier?.destroy();
      client.carrier = null;
      // Never used, and gone before the caller starts another on the same vault.
      client.closing = true;
      await client.terminated();
      throw error;
    }
    return client;
  }

  get isLost(): boolean {
    return this.lost !== null;
  }

  /** Requests sent so far (one-way ones not counted): tests count the round trips of a call. */
  requestsSent = 0;

  /** Sends a request; resolves with its reply (typed by the protocol's table), rejects with its error. */
  request<T extends RequestType>(type: T, body: RequestBody<T>): Promise<Replies[T]> {
    if (this.lost) return Promise.reject(this.lost);
    this.requestsSent++;
    const id = this.nextId++;
    const frame = encodeFrame({ ...body, type, id });
    return new Promise<Replies[T]>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: never) => void, reject });
      if (this.pending.size === 1) this.socket.ref();
      this.send(frame);
    });
  }

  /**
   * Sends a one-way request (protocol: ONE_WAY): no id, no reply, nothing to wait for, so it
   * neither keeps the runtime alive nor wakes it. A supervisor already lost is not asked: what it
   * held went with it. A refusal comes back as a protocol-error event.
   */
  tell<T extends OneWayType>(type: T, body: RequestBody<T>): void {
    if (this.lost) return;
    this.send(encodeFrame({ ...body, type }));
  }

  /**
   * The requests of one turn (a batch of job events answered with forgets and the next spawns)
   * leave in one system call and wake the supervisor once, as its replies do (supervisor/channel.ts).
   * The flush runs as soon as this turn's code is done, so a lone request is not held back.
   */
  private send(frame: Buffer): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      // A tick queued from a microtask runs after every promise reaction of this turn: a request
      // sent while a reply is handled (a job's cleaned-up event evicts an old job: forget) leaves
      // after the caller of that reply has its answer, not ahead of it.
      queueMicrotask(() =>
        process.nextTick(() => {
          this.corked = false;
          this.socket.uncork();
        }),
      );
    }
    this.socket.write(frame);
  }

  /** Asks the supervisor to stop everything and waits for it to exit. */
  async shutdown(): Promise<void> {
    this.closing = true;
    if (this.lost || this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.ref();
    await this.request('shutdown', {}).catch(() => {});
    await exited;
  }

  /** Kills the supervisor outright (tests of the lost path). */
  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /**
   * Resolves once the process has exited, SIGKILLing it first if it has not (a supervisor found
   * lost while it still runs, say after a bad frame). It is our child and not reaped until 'exit',
   * so its pid cannot name anyone else.
   */
  async terminated(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGKILL');
    await exited;
  }

  private dispatch(message: Incoming): void {
    if ('event' in message) {
      this.events.onEvent(message);
      return;
    }
    const waiter = this.pending.get(message.id);
    if (!waiter) {
      this.markLost(new SupervisorLostError(`the supervisor answered request ${message.id}, which was never sent`));
      return;
    }
    this.pending.delete(message.id);
    if (this.pending.size === 0) this.socket.unref();
    if (message.ok) waiter.resolve(message.value as never);
    else waiter.reject(deserializeError(message.error));
  }

  /**
   * The channel closed: a supervisor that died closes it just before its exit is reported, so the
   * exit is waited for (bounded) and told instead: "killed by SIGKILL" says more than a closed channel.
   */
  private channelClosed(): void {
    if (this.lost || this.child.exitCode !== null || this.child.signalCode !== null) {
      this.markLost(this.lostError(exitText(this.child.exitCode, this.child.signalCode)));
      return;
    }
    const timer = setTimeout(() => this.markLost(this.lostError('closed the channel')), EXIT_AFTER_CLOSE_MS);
    this.child.once('exit', () => clearTimeout(timer));
  }

  private lostError(what: string): SupervisorLostError {
    const tail = this.stderrTail.length ? `; its last words: ${this.stderrTail.join(' | ')}` : '';
    return new SupervisorLostError(`the supervisor (pid ${this.pid}) ${what}${tail}`);
  }

  private markLost(error: SupervisorLostError): void {
    if (this.lost) return;
    this.lost = error;
    this.socket.destroy();
    for (const waiter of this.pending.values()) waiter.reject(error);
    this.pending.clear();
    if (!this.closing) this.events.onLost(error, this);
  }
}

