/**
 * Keeps the runtime's supervisor: starts it when first needed (one start even when many calls
 * ask at once), notices when it dies, and has a fresh one stop what the dead one left behind. The
 * runtime process itself never touches a job's processes: that is the supervisor's work, so a
 * fault in it stays out of the agent runtime (issue 11).
 */
import type net from 'node:net';
import type { HelloReply, LostJob, RequestBody, SupervisorConfig, SupervisorEvent } from '../protocol/messages.js';
import { SupervisorLostError } from '../protocol/errors.js';
import { SupervisorClient } from './supervisor-client.js';
import { lockDirLimitations } from '../wording/index.js';

export interface KeeperEvents {
  onEvent(event: SupervisorEvent): void;
  /** The current supervisor died (not when it was shut down on purpose). */
  onLost(lost: SupervisorClient, error: SupervisorLostError): void;
  /**
   * A supervisor came up, before any call can use it: it takes over what lost ones left (the
   * leases it adopted from the vault). Called for every supervisor, however short-lived.
   */
  onStarted(client: SupervisorClient): void;
}

/** The lock directory's limitation as a process warning, or null when the one asked for is used. */
function lockDirWarning(locks: HelloReply['locks']): string | null {
  const [text] = lockDirLimitations(locks);
  return text === undefined ? null : `heph-jobs: ${text}`;
}

/** A dead supervisor's cleanup no supervisor has done yet; `settle(null)` once one has. */
interface OwedCleanup {
  body: RequestBody<'cleanup-lost'>;
  settle: (refused: Error | null) => void;
}

/** Supervisors started (or lost) in a row for the owed cleanups before the rest waits for the next call. */
const OWED_ATTEMPTS = 3;

export class SupervisorKeeper {
  private client: SupervisorClient | null = null;
  private starting: Promise<SupervisorClient> | null = null;
  /** The last supervisor that came up: a fresh one that inherits the vault starts only once it is gone. */
  private previous: SupervisorClient | null = null;
  /**
   * The runtime's end of the lock vault's carrier (supervisor/locks/vault.ts), once a supervisor
   * filled it: held, never read, for as long as the runtime runs (or until shutdown), so leases
   * outlive any one supervisor; each later supervisor inherits it.
   */
  private carrier: net.Socket | null = null;
  /** Off only in tests (the negative control of the crash window). */
  vaultEnabled = true;
  /** Tests only: added to the next supervisor's environment (a fault it injects), then cleared. */
  nextStartEnv: NodeJS.ProcessEnv = {};
  /** Work that follows a lost supervisor (cleanup, retaking leases); awaited by `settled()`. */
  private readonly aftermath = new Set<Promise<unknown>>();
  /** Cleanups owed: each supervisor that comes up takes over those still owed. */
  private readonly owed = new Set<OwedCleanup>();
  private cleaning: Promise<void> | null = null;
  /** After shutdown no supervisor is started again. */
  private shut = false;

  constructor(
    private readonly config: () => SupervisorConfig,
    private readonly events: KeeperEvents,
  ) {}

  /** The running supervisor, if any. */
  get current(): SupervisorClient | null {
    return this.client;
  }

  get hello(): HelloReply | null {
    return this.client?.hello ?? null;
  }

  /** The running supervisor, started now if there is none. */
  ensure(): Promise<SupervisorClient> {
    if (this.client && !this.client.isLost) return Promise.resolve(this.client);
    if (this.shut) return Promise.reject(new SupervisorLostError('the runtime is closed: no supervisor is started again'));
    this.starting ??= this.start().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  /**
   * Starts a supervisor (once per start, however many calls wait for it), hands it what lost ones
   * left, and says what it could not set up.
   */
  private async start(): Promise<SupervisorClient> {
    const client = await this.startWithVault();
    this.client = client;
    this.previous = client;
    this.events.onStarted(client);
    if (this.owed.size > 0) this.cleanOwed();
    const warning = lockDirWarning(client.hello!.locks);
    if (warning) process.emitWarning(warning, { code: 'HEPH_JOBS_LOCK_DIR' });
    return client;
  }

  private async startWithVault(): Promise<SupervisorClient> {
    const env = this.nextStartEnv;
    this.nextStartEnv = {};
    const events = {
      onEvent: (event: SupervisorEvent) => this.events.onEvent(event),
      onLost: (error: SupervisorLostError, client: SupervisorClient) => this.lost(client, error),
    };
    if (!this.vaultEnabled) return SupervisorClient.start(this.config(), events, { mode: 'none' }, env);
    const carrier = this.carrier;
    if (!carrier) {
      const client = await SupervisorClient.start(this.config(), events, { mode: 'create' }, env);
      if (client.hello!.vault.state === 'created') this.carrier = client.carrier;
      else client.carrier?.destroy();
      client.carrier = null;
      return client;
    }
    // Two supervisors must never work on the vault at once: the lost one is gone first (a start
    // that failed has waited for its own supervisor's exit already).
    await this.previous?.terminated();
    const client = await SupervisorClient.start(this.config(), events, { mode: 'inherit', carrier }, env);
    if (client.hello!.vault.state !== 'inherited') {
      // No vault in it after all: the next supervisor makes a new one.
      carrier.destroy();
      this.carrier = null;
    }
    return client;
  }

  /** Keeps `work` (something a lost supervisor left to do) until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    const tracked = work.finally(() => this.aftermath.delete(tracked));
    this.aftermath.add(tracked);
    return tracked;
  }

  /** Resolves once every piece of aftermath has settled (new pieces included). */
  async settled(): Promise<void> {
    while (this.aftermath.size > 0) await Promise.allSettled([...this.aftermath]);
  }

  /**
   * Owes a fresh supervisor the stopping of every remaining process of the dead one's jobs and the
   * removal of its cgroups. Resolves null once a supervisor did it, or with the error it refused it
   * with; while supervisors die before doing it, it stays owed to the next one.
   */
  oweCleanup(dead: SupervisorClient, jobs: LostJob[]): Promise<Error | null> {
    // A supervisor that died before its hello reply started no job: the next one's start sweep
    // covers anything else it may have left.
    if (!dead.hello) return Promise.resolve(null);
    const body = { supervisor: dead.hello.instance, jobs };
    return new Promise((settle) => {
      this.owed.add({ body, settle });
      this.cleanOwed();
    });
  }

  /** Has supervisors do the owed cleanups (a few in a row at most; the rest waits for the next start). */
  private cleanOwed(): void {
    if (this.cleaning || this.shut) return;
    this.cleaning = this.track(
      (async () => {
        for (let failures = 0; this.owed.size > 0 && failures < OWED_ATTEMPTS; ) {
          let client: SupervisorClient;
          try {
            client = await this.ensure();
          } catch {
            failures++;
            continue;
          }
          for (const owed of [...this.owed]) {
            try {
              await client.request('cleanup-lost', owed.body);
            } catch (error) {
              if (error instanceof SupervisorLostError) {
                failures++;
                break;
              }
              this.owed.delete(owed);
              owed.settle(error as Error);
              continue;
            }
            this.owed.delete(owed);
            owed.settle(null);
          }
        }
      })().finally(() => {
        this.cleaning = null;
      }),
    );
  }

  /** Stops the supervisor (it stops every job it still has) once starts and aftermath have settled. */
  async shutdown(): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined);
    await this.settled();
    this.shut = true;
    await this.client?.shutdown();
    this.client = null;
    // The vault goes with it, and with the vault whatever leases a lost supervisor left there.
    this.carrier?.destroy();
    this.carrier = null;
  }

  private lost(client: SupervisorClient, error: SupervisorLostError): void {
    // One lost before it was handed out ran no job; the next start waits for it all the same.
    if (client !== this.client) return;
    this.client = null;
    this.events.onLost(client, error);
  }
}
