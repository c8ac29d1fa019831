import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AllowedHosts } from '../domain/allowed-hosts-setting.js';
import type { CorsOrigins } from '../domain/cors-origins-setting.js';
import { ApiError } from '../domain/errors.js';
import { refuseDisallowedHosts } from './allowed-hosts.js';
import { awaitConnectionTurn } from './connection-turn.js';
import { registerCors } from './cors.js';
import { refuseContentCoding } from './content-coding.js';
import { refuseImpossibleUids } from './record-uid-length.js';
import { rejectRepeatedHeaders } from './repeated-headers.js';
import { refuseForbiddenTargetBytes, refuseTransferEncodingOnHttp10 } from './request-framing.js';
import { bodyPending } from './unread-body.js';

export interface RequestHooksOptions {
  /** The Host names /api/ routes answer for (ALLOWED_HOSTS); any host when absent. */
  allowedHosts?: AllowedHosts | undefined;
  /** The origins whose browser pages may read answers (CORS_ALLOWED_ORIGINS): their preflights are answered here. */
  corsOrigins: CorsOrigins;
}

/**
 * What every request goes through before its route: its turn on a pipelined connection, its id, the
 * refusals of what no route may read (repeated headers, framing, an unknown path, an impossible uid, a
 * Host not served), a CORS preflight, and, before a body is read, a content coding.
 */
export const requestHooks = fp(async (app: FastifyInstance, options: RequestHooksOptions) => {
  // First: a pipelined request runs only once the answers before it on its connection are sent.
  app.addHook('onRequest', awaitConnectionTurn);
  // Callback style: an async hook costs a promise and a microtask turn per request (a throw here is Fastify's to catch).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // Only the write routes read a body: a request still sending one elsewhere is answered
    // (404, 405, or whatever its route says) without waiting for it, and its connection closed.
    // The body check first: request.routeOptions builds an object of a dozen fields on every read.
    if (bodyPending(request) && !request.routeOptions.config.readsBody) reply.header('connection', 'close');
    rejectRepeatedHeaders(request);
    refuseTransferEncodingOnHttp10(request);
    refuseForbiddenTargetBytes(request);
    if (request.is404) throw notFound(request);
    refuseImpossibleUids(request);
    done();
  });
  if (options.allowedHosts) app.addHook('onRequest', refuseDisallowedHosts(options.allowedHosts));
  registerCors(app, options.corsOrigins);
  // After the write routes' credentials checks (onRequest), before the body is read.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    refuseContentCoding(request);
    done(null, payload);
  });
});

export function notFound(request: FastifyRequest): ApiError {
  return new ApiError('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`);
}
