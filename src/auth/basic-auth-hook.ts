import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { Queryable } from '../store/store.js';
import type { AuthCache } from './auth-cache.js';
import { authenticate, authenticateSession, parseBasicAuthorization, type AuthContext } from './authenticate.js';
import { parseBearerAuthorization } from './portal-secrets.js';
import { WWW_AUTHENTICATE } from './www-authenticate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set for every request that passed authentication (Basic, or a portal session's Bearer). */
    auth?: AuthContext;
  }
}

export function unauthorized(): ApiError {
  return new ApiError(
    'unauthorized',
    'send HTTP Basic credentials: your organization ID as the user name and an active API key as the password',
    { headers: { 'www-authenticate': WWW_AUTHENTICATE } },
  );
}

/** An authentication hook that may also answer at once, without a promise, from its cache. */
export type AuthenticateHook = onRequestAsyncHookHandler & {
  /** Sets `request.auth` and answers true when the request's credentials are cached; false: run the hook. */
  fromCache?: (request: FastifyRequest) => boolean;
};

/** The 401 of a Bearer credential that is not (or no longer) a portal session. */
export function sessionEnded(): ApiError {
  return new ApiError(
    'unauthorized',
    'the portal session has ended (it lasts at most an hour, and ends when the key that made it is revoked) or is not valid: open a new portal link',
    { headers: { 'www-authenticate': WWW_AUTHENTICATE } },
  );
}

/**
 * Fastify hook: rejects the request with 401 unless it carries valid
 * credentials — HTTP Basic (organization ID and API key), or
 * `Bearer lps_…`, a portal session (docs/portal.md) — looked up through
 * `databaseOf(request)` (the request's view of the store) when the cache does
 * not have them. Both kinds share the cache, so a revoked key's sessions end
 * within the same bound as the key.
 */
export function basicAuthHook(databaseOf: (request: FastifyRequest) => Queryable, cache?: AuthCache): AuthenticateHook {
  async function requireBasicAuth(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const authorization = request.headers.authorization;
    const credentials = parseBasicAuthorization(authorization);
    const session = credentials ? undefined : parseBearerAuthorization(authorization);
    // Anything but Basic or a session's Bearer (an API key sent as Bearer included) gets the one Basic challenge.
    if (authorization === undefined || (!credentials && session === undefined)) throw unauthorized();
    const cached = cache?.get(authorization);
    if (cached) {
      request.auth = cached;
      return;
    }
    const database = databaseOf(request);
    const check = () => (credentials ? authenticate(database, credentials) : authenticateSession(database, session!));
    const auth = await (cache ? cache.verify(authorization, check) : check());
    if (!auth) throw credentials ? unauthorized() : sessionEnded();
    request.auth = auth;
  }
  if (!cache) return requireBasicAuth;
  return Object.assign(requireBasicAuth, {
    fromCache(request: FastifyRequest): boolean {
      // Only a header that parsed and verified was remembered: a hit needs no parsing.
      const authorization = request.headers.authorization;
      const cached = authorization !== undefined && cache.get(authorization);
      if (!cached) return false;
      request.auth = cached;
      return true;
    },
  });
}

export function requireAuth(request: FastifyRequest): AuthContext {
  if (!request.auth) throw unauthorized();
  return request.auth;
}
