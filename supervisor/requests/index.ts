/**
 * Serving a request: refused while shutting down; before hello, refused as "hello must come
 * first" (whatever its fields) unless it is about the process alone; checked against its shape
 * in the protocol's table; then handed to its handler. Every request type has exactly one handler
 * (the table below is checked at compile time against the protocol's).
 */
import { ProtocolError } from '../../src/protocol/errors.js';
import { requestProblem, type RequestFields, type RequestType } from '../../src/protocol/messages.js';
import type { Handler, Handlers, RequestContext } from './context.js';
import { jobHandlers } from './jobs.js';
import { lockHandlers } from './locks.js';
import { sessionHandlers } from './session.js';

export type { RequestContext };

/** Requests served before hello: they touch no job, lock or cgroup. */
const BEFORE_HELLO: ReadonlySet<RequestType> = new Set<RequestType>(['hello', 'ping', 'diagnostics', 'shutdown']);

export function requestHandler(context: RequestContext): (request: RequestFields) => Promise<unknown> {
  const handlers: Handlers<RequestType> = { ...sessionHandlers(context), ...jobHandlers(context), ...lockHandlers(context) };
  const { state } = context;
  return async (request) => {
    if (state.shuttingDown) throw new ProtocolError('the supervisor is shutting down');
    if (state.setup === null && !BEFORE_HELLO.has(request.type)) throw new ProtocolError('hello must come first');
    const problem = requestProblem(request);
    if (problem !== null) throw new ProtocolError(problem);
    const handler = handlers[request.type] as Handler<RequestType> | undefined;
    if (!handler) throw new ProtocolError(`unknown request type ${JSON.stringify(request.type)}`);
    return handler(request);
  };
}
