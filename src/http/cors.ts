import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { CORS_ALLOWED_REQUEST_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS, type CorsOrigins } from '../domain/cors-origins-setting.js';

/**
 * CORS for the origins of CORS_ALLOWED_ORIGINS. A request whose `Origin` is
 * one of them gets `Access-Control-Allow-Origin: <that origin>` and the
 * headers it may read on every answer (a problem included); its preflight
 * (`OPTIONS` with `Access-Control-Request-Method`) on a path the app serves
 * is a 204 instead of the 405 other OPTIONS get. Every answer says
 * `Vary: Origin` once any origin is allowed, so a shared cache never hands
 * one origin's answer to another. Any other origin gets no CORS header: its
 * browser pages cannot read the answers.
 */
export function registerCors(app: FastifyInstance, origins: CorsOrigins): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  app.addHook('onRequest', answerPreflight(allowed));
  // Callback style, like the security headers: on every answer, however it was produced.
  app.addHook('onSend', (request, reply, payload, done) => {
    addVaryOrigin(reply);
    if (allowedOrigin(request, allowed)) {
      reply.header('access-control-allow-origin', request.headers.origin);
      reply.header('access-control-expose-headers', CORS_EXPOSED_HEADERS);
    }
    done(null, payload);
  });
}

function allowedOrigin(request: FastifyRequest, allowed: ReadonlySet<string>): boolean {
  const origin = request.headers.origin;
  return typeof origin === 'string' && allowed.has(origin);
}

function answerPreflight(allowed: ReadonlySet<string>): onRequestHookHandler {
  return (request, reply, done) => {
    const allow = request.routeOptions.config.allow;
    if (request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined || allow === undefined || !allowedOrigin(request, allowed)) {
      done();
      return;
    }
    void reply
      .code(204)
      .header('access-control-allow-methods', allow)
      .header('access-control-allow-headers', CORS_ALLOWED_REQUEST_HEADERS)
      .header('access-control-max-age', String(CORS_MAX_AGE_SECONDS))
      .send();
  };
}

function addVaryOrigin(reply: FastifyReply): void {
  const vary = reply.getHeader('vary');
  if (vary === undefined) reply.header('vary', 'Origin');
  else if (!String(vary).split(',').some((name) => name.trim().toLowerCase() === 'origin')) reply.header('vary', `${String(vary)}, Origin`);
}
