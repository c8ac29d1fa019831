import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/**
 * Pipelined requests on one connection run one after another: a request
 * starts once every answer before it on its connection has been sent and
 * the connection is still open for its own.
 *
 * Node parses every pipelined request as soon as its bytes arrive and hands
 * each to the app at once, but sends the answers in order; an answer that
 * closes the connection (a refusal of a body it did not read, `Expect: foo`,
 * the client's own `Connection: close`) drops the answers queued behind it.
 * A write among those would be recorded and never answered. Waiting for the
 * turn keeps the rule both ways: a request that runs is answered, and a
 * request on a connection an earlier answer closed never runs. The first
 * request of a connection, and every request that is not pipelined, has its
 * turn at once (no wait, no allocation).
 */
export function awaitConnectionTurn(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const response = reply.raw;
  // Node gives the response the socket when the answers before it are sent (at once when there are none).
  if (response.socket !== null) {
    done();
    return;
  }
  const socket = request.raw.socket;
  if (socket.destroyed) {
    notRun(request);
    return;
  }
  const waiters = waitersOn(socket);
  const onTurn = () => {
    waiters.delete(onClosed);
    // The server's side was ended while this request waited (an answer written straight to the socket).
    if (socket.writableEnded) notRun(request);
    else done();
  };
  const onClosed = () => {
    response.off('socket', onTurn);
    notRun(request);
  };
  waiters.add(onClosed);
  response.once('socket', onTurn);
}

/** One `close` listener per connection, however many requests wait on it. */
const closeWaiters = new WeakMap<Socket, Set<() => void>>();

function waitersOn(socket: Socket): Set<() => void> {
  let waiters = closeWaiters.get(socket);
  if (!waiters) {
    const created = new Set<() => void>();
    closeWaiters.set(socket, created);
    socket.once('close', () => {
      for (const waiter of created) waiter();
      created.clear();
    });
    waiters = created;
  }
  return waiters;
}

/** The request's lifecycle stops here: nothing ran, and no answer can reach the client. */
function notRun(request: FastifyRequest): void {
  request.log.info({ method: request.method, url: request.url.split('?')[0] }, 'request not run: an earlier answer on its connection closed it');
}


/**
 * A client that sends its requests and then half-closes the connection
 * (its last bytes, then FIN) still gets every answer: Node's default ends
 * the server's side as soon as the FIN arrives, dropping the answers of
 * requests still running — writes recorded and never answered. With this
 * flag (Node's own, on every HTTP server) the last answer queued closes the
 * connection instead.
 */
export function answerEveryRequestBeforeHalfClose(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}
