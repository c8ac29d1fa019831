import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import { LINK_TOKEN_PATTERN, parseBearerAuthorization } from '../auth/portal-secrets.js';
import { WWW_AUTHENTICATE } from '../auth/www-authenticate.js';
import { ApiError } from '../domain/errors.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { decodeJsonBody } from '../http/json-body-text.js';
import { publicBaseUrl } from '../http/public-url.js';
import type { DatabaseOf } from '../http/request-database.js';
import { closeIfBodyPending } from '../http/unread-body.js';
import { parseBodyObject, refuseUnknownMembers, typeName } from '../http/write-body.js';
import { authenticateWithLimits } from '../rate-limits/rate-limits.js';
import { createPortalLink, endPortalSession, exchangePortalLink, LINK_MINUTES, scopesOf, type ExchangeRefusal } from './portal-sessions.js';

export const PORTAL_SESSIONS_PATH = '/api/portal_sessions/';
export const PORTAL_EXCHANGE_PATH = '/api/portal_sessions/exchange/';
export const PORTAL_CURRENT_SESSION_PATH = '/api/portal_sessions/current/';

export interface PortalSessionRoutesOptions {
  readonly databaseOf: DatabaseOf;
  readonly publicUrl: string | undefined;
  readonly authCache?: AuthCache | undefined;
}

const REFUSALS: Record<ExchangeRefusal, string> = {
  used: 'this portal link was already used: a link opens one session; ask for a new link',
  expired: `this portal link has expired (links are valid ${LINK_MINUTES} minutes): ask for a new link`,
  not_valid: 'this portal link is not valid (unknown, mistyped, or its API key was revoked): ask for a new link',
};

/** Bodies only as JSON, read as text (parseBodyObject), answers never cached, a refused body not waited for. */
function jsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, decodeJsonBody(request.headers['content-type'], body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('cache-control', 'no-store');
    closeIfBodyPending(request, reply);
    done(null, payload);
  });
}

const bodyText = (request: FastifyRequest) => (typeof request.body === 'string' ? request.body : undefined);
const withBody = { bodyLimit: MAX_WRITE_BODY_BYTES, config: { readsBody: true } };

/**
 * The portal's way in (SPEC §9, docs/portal.md "Access: sessions and links"):
 * any API key makes a one-time link (`POST /api/portal_sessions/`), and the
 * link's token, read by the portal from the fragment, is exchanged once for a
 * session (`POST /api/portal_sessions/exchange/`, no credentials: the token
 * is one); the session ends itself (`DELETE /api/portal_sessions/current/`,
 * signing out). The token and the session secret travel only in bodies and in
 * the Authorization header, which no log line holds.
 */
export async function portalSessionRoutes(app: FastifyInstance, options: PortalSessionRoutesOptions): Promise<void> {
  await app.register(async (scope) => {
    jsonBodies(scope);
    authenticateWithLimits(scope, basicAuthHook(options.databaseOf, options.authCache));
    scope.post(PORTAL_SESSIONS_PATH, withBody, async (request, reply) => {
      const auth = requireAuth(request);
      // A session making links would renew itself forever: only a key can.
      if (auth.portalSession) throw new ApiError('insufficient_scope', 'a portal session cannot make portal links: make one with an API key (HTTP Basic)');
      if ((bodyText(request) ?? '').trim() !== '') {
        const errors = refuseUnknownMembers(parseBodyObject(bodyText(request), 'body', '{}'), []);
        if (errors.length > 0) throw ApiError.invalidBody(errors);
      }
      const link = await createPortalLink(options.databaseOf(request), auth.orgId, auth.keyId);
      const url = `${publicBaseUrl(request, options.publicUrl)}/portal/#token=${link.token}`;
      return reply.code(201).send({ object: 'portal_session', url, expires_at: link.expiresAt });
    });
    scope.delete(PORTAL_CURRENT_SESSION_PATH, async (request, reply) => {
      const auth = requireAuth(request);
      const secret = parseBearerAuthorization(request.headers.authorization);
      if (!auth.portalSession || secret === undefined) {
        throw new ApiError(
          'bad_request',
          'this ends the portal session that sends it (Authorization: Bearer lps_…); an API key (HTTP Basic) is not a session: revoke a key with `lending-api key revoke`',
        );
      }
      await endPortalSession(options.databaseOf(request), secret);
      // This node forgets it now; the others within AUTH_CACHE_TTL_MS, their cache's bound.
      options.authCache?.forget(request.headers.authorization!);
      return reply.code(204).send();
    });
  });

  await app.register(async (scope) => {
    jsonBodies(scope);
    const { beforeAuth, onAuthFailure } = scope.hasDecorator('requestLimits') ? scope.requestLimits : {};
    scope.post(PORTAL_EXCHANGE_PATH, withBody, async (request, reply) => {
      // An address that failed too often is refused before any work; each refused token counts as a failed authentication.
      beforeAuth?.(request);
      const token = tokenOf(bodyText(request));
      const result = await exchangePortalLink(options.databaseOf(request), token);
      if (typeof result === 'string') {
        await onAuthFailure?.(request);
        throw new ApiError('unauthorized', REFUSALS[result], { headers: { 'www-authenticate': WWW_AUTHENTICATE } });
      }
      return reply.code(201).send({
        object: 'portal_session_grant',
        session: result.session,
        expires_at: result.expiresAt,
        organization_id: result.organizationUid,
        scopes: scopesOf(result.scope),
      });
    });
  });
}

function tokenOf(raw: string | undefined): string {
  const body = parseBodyObject(raw, 'token', '{"token": "lpt_…"}');
  const errors = refuseUnknownMembers(body, ['token']);
  const token = body.token;
  if (token === undefined) errors.push({ param: 'token', detail: 'token is required: the text after #token= in the portal link' });
  // The value is never quoted back: it is a credential.
  else if (typeof token !== 'string') errors.push({ param: 'token', detail: `token must be a string, got ${typeName(token)}` });
  else if (!LINK_TOKEN_PATTERN.test(token)) errors.push({ param: 'token', detail: 'token must be the text after #token= in the portal link: lpt_ and 43 letters, digits, - or _' });
  if (errors.length > 0) throw ApiError.invalidBody(errors);
  return token as string;
}
