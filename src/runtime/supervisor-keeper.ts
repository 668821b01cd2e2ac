/**
 * Keeps the runtime's supervisor: starts it when first needed (one start even when many calls
 * ask at once), notices when it dies, and has a fresh one stop what the dead one left behind. The
 * runtime process itself never touches a job's processes: that is the supervisor's work, so a
 * fault in it stays out of the agent runtime (issue 11).
 */
import type net from 'node:net';
import type { HelloReply, LostJob, SupervisorConfig, SupervisorEvent } from '../protocol/messages.js';
import type { SupervisorLostError } from '../protocol/errors.js';
import { SupervisorClient } from './supervisor-client.js';
import { lockDirLimitations } from '../wording/index.js';

export interface KeeperEvents {
  onEvent(event: SupervisorEvent): void;
  /** The current supervisor died (not when it was shut down on purpose). */
  onLost(lost: SupervisorClient, error: SupervisorLostError): void;
}

/** The lock directory's limitation as a process warning, or null when the one asked for is used. */
function lockDirWarning(locks: HelloReply['locks']): string | null {
  const [text] = lockDirLimitations(locks);
  return text === undefined ? null : `heph-jobs: ${text}`;
}

export class SupervisorKeeper {
  private client: SupervisorClient | null = null;
  private starting: Promise<SupervisorClient> | null = null;
  /** The last supervisor lost: a fresh one that inherits the vault starts only once it is gone. */
  private previous: SupervisorClient | null = null;
  /**
   * The runtime's end of the lock vault's carrier (supervisor/locks/vault.ts), once a supervisor
   * filled it: held, never read, for as long as the runtime runs (or until shutdown), so leases
   * outlive any one supervisor; each later supervisor inherits it.
   */
  private carrier: net.Socket | null = null;
  /** Off only in tests (the negative control of the crash window). */
  vaultEnabled = true;
  /** Work that follows a lost supervisor (cleanup, retaking leases); awaited by `settled()`. */
  private readonly aftermath = new Set<Promise<unknown>>();

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
  async ensure(): Promise<SupervisorClient> {
    if (this.client && !this.client.isLost) return this.client;
    this.starting ??= this.start().finally(() => {
      this.starting = null;
    });
    const client = await this.starting;
    this.client = client;
    return client;
  }

  /** Starts a supervisor (once per start, however many calls wait for it) and says what it could not set up. */
  private async start(): Promise<SupervisorClient> {
    const client = await this.startWithVault();
    const warning = lockDirWarning(client.hello!.locks);
    if (warning) process.emitWarning(warning, { code: 'HEPH_JOBS_LOCK_DIR' });
    return client;
  }

  private async startWithVault(): Promise<SupervisorClient> {
    const events = { onEvent: (event: SupervisorEvent) => this.events.onEvent(event), onLost: (error: SupervisorLostError) => this.lost(error) };
    if (!this.vaultEnabled) return SupervisorClient.start(this.config(), events);
    const carrier = this.carrier;
    if (!carrier) {
      const client = await SupervisorClient.start(this.config(), events, { mode: 'create' });
      if (client.hello!.vault.state === 'created') this.carrier = client.carrier;
      else client.carrier?.destroy();
      client.carrier = null;
      return client;
    }
    // Two supervisors must never work on the vault at once: the lost one is gone first.
    await this.previous?.terminated();
    const client = await SupervisorClient.start(this.config(), events, { mode: 'inherit', carrier });
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
   * Asks a fresh supervisor to stop every remaining process of the dead one's jobs and remove its
   * cgroups. After `close()` there is no supervisor to ask, so one is started for this alone.
   */
  async cleanupAfter(dead: SupervisorClient, jobs: LostJob[], closed: boolean): Promise<void> {
    // A supervisor that died before its hello reply started no job: the next one's start sweep
    // covers anything else it may have left.
    if (!dead.hello) return;
    const body = { supervisor: dead.hello.instance, jobs };
    if (!closed) {
      await (await this.ensure()).request('cleanup-lost', body);
      return;
    }
    const temporary = await SupervisorClient.start(this.config(), { onEvent: () => undefined, onLost: () => undefined });
    try {
      await temporary.request('cleanup-lost', body);
    } finally {
      await temporary.shutdown();
    }
  }

  /** Stops the supervisor (it stops every job it still has) once starts and aftermath have settled. */
  async shutdown(): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined);
    await this.settled();
    await this.client?.shutdown();
    this.client = null;
    // The vault goes with it, and with the vault whatever leases a lost supervisor left there.
    this.carrier?.destroy();
    this.carrier = null;
  }

  private lost(error: SupervisorLostError): void {
    const dead = this.client;
    if (!dead || !dead.isLost) return;
    this.client = null;
    this.previous = dead;
    this.events.onLost(dead, error);
  }
}
