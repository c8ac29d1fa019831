import type { FastifyInstance } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import type { KeyScope } from '../auth/key-scope.js';
import { ApiError } from '../domain/errors.js';
import { authenticateWithLimits } from '../rate-limits/rate-limits.js';
import { decodeJsonBody } from './json-body-text.js';
import type { DatabaseOf } from './request-database.js';
import { closeIfBodyPending } from './unread-body.js';

export interface ScopedJsonRoutesOptions {
  readonly databaseOf: DatabaseOf;
  readonly authCache?: AuthCache | undefined;
  /** The key scope every route of the plugin needs; another key gets 403 `insufficient_scope` with `refusal`. */
  readonly scope: KeyScope;
  readonly refusal: string;
  /** Which rate-limit budget the plugin's requests spend. */
  readonly budget: 'reads' | 'writes';
}

/**
 * What every plugin of requests that change data sets up first (writes,
 * webhook endpoints, resend): bodies only as JSON (parsed by the routes
 * themselves: exact decimals), credentials and the rate limit, the key's
 * scope (403 before any body is read), and answers that are never cached and
 * close a connection whose refused body was not read.
 */
export function scopedJsonRoutes(app: FastifyInstance, options: ScopedJsonRoutesOptions): void {
  // Only JSON: without this Fastify would also accept text/plain.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, decodeJsonBody(request.headers['content-type'], body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  authenticateWithLimits(app, basicAuthHook(options.databaseOf, options.authCache), options.budget);
  // Callback style, as the app's own hooks: an async hook costs a promise and a microtask turn per request.
  app.addHook('onRequest', (request, _reply, done) => {
    if (requireAuth(request).scope !== options.scope) throw new ApiError('insufficient_scope', options.refusal);
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('cache-control', 'no-store');
    // Refused before its body was read (401, 403, 429): do not wait for the rest of it.
    closeIfBodyPending(request, reply);
    done(null, payload);
  });
}
