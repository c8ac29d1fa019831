import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../domain/errors.js';
import { sendProblem } from './problem.js';

/**
 * A request that arrives once the node has begun to close (on an open
 * keep-alive connection, or on one accepted just before the port closed)
 * is answered 503 `service_unavailable` as problem+json, with Retry-After
 * and `Connection: close`. Fastify's own closing answer (return503OnClosing,
 * turned off in app.ts) is a JSON of its own: no problem, no request id, a
 * status the route's contract may not name.
 */
export const closingAnswers = fp(async (app: FastifyInstance) => {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    const detail = 'this node is shutting down: send the request again (to another node, or to this one once it is back)';
    return sendProblem(request, reply, new ApiError('service_unavailable', detail, { headers: { 'retry-after': '1' } }));
  });
});
