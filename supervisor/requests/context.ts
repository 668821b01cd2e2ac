/** What every request handler works with, and the shape of a handler table. */
import type { Replies, RequestFields, RequestType, SupervisorEvent } from '../../src/protocol/messages.js';
import type { SupervisorState } from '../state.js';

export interface RequestContext {
  readonly state: SupervisorState;
  /** Sends an event to the runtime. */
  send(event: SupervisorEvent): void;
  /** Stops every job, removes our cgroups and exits (once; later calls join the first). */
  shutdown(): void;
}

/** A handler sees the request's type and fields; its id (none, one way) is the channel's business. */
export type Handler<T extends RequestType> = (request: RequestFields<T>) => Replies[T] | Promise<Replies[T]>;

/** Handlers for some request types (each module serves a few). */
export type Handlers<T extends RequestType> = { [K in T]: Handler<K> };
