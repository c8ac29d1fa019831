import type { FastifyInstance } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { requireAuth } from '../auth/basic-auth-hook.js';
import { ApiError, type ParamError } from '../domain/errors.js';
import { ASCII_CONTROL_CHARACTERS, hasLoneSurrogate } from '../domain/well-formed-text.js';
import { resendEvent } from '../events/resend-event.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import type { Store } from '../store/store.js';
import type { DatabaseOf } from './request-database.js';
import { scopedJsonRoutes } from './scoped-json-routes.js';
import { parseBodyObject, refuseUnknownMembers, typeName } from './write-body.js';

export interface EventRoutesOptions {
  /** Resends run in a transaction of their own (src/events/resend-event.ts), within the request's budget. */
  store: Store;
  databaseOf: DatabaseOf;
  authCache?: AuthCache | undefined;
}

export const RESEND_PATH = '/api/events/:uid/resend/';
const MAX_ENDPOINT_ID_LENGTH = 255;

/**
 * `POST /api/events/{id}/resend/` (SPEC §3c): a key with the `webhooks`
 * scope queues the event for delivery again, now, to every enabled endpoint
 * that wants it or to the one the body names (`{"endpoint": "we_…"}`, even
 * if it no longer wants the event). 202 with the endpoints it goes to. An
 * event already waiting for an endpoint is not queued again: its next
 * attempt is brought forward, so resending twice is resending once. The list and the
 * retrieve are the list engine's (resource-routes.ts).
 */
export async function eventRoutes(app: FastifyInstance, options: EventRoutesOptions): Promise<void> {
  const { store, databaseOf, authCache } = options;
  scopedJsonRoutes(app, {
    databaseOf,
    authCache,
    scope: 'webhooks',
    refusal: 'resending an event needs a key created with `key create --scope webhooks`',
    budget: 'writes',
  });

  app.post<{ Params: { uid: string } }>(RESEND_PATH, { bodyLimit: MAX_WRITE_BODY_BYTES, config: { readsBody: true } }, async (request, reply) => {
    const { orgId } = requireAuth(request);
    const endpoint = endpointOf(typeof request.body === 'string' ? request.body : undefined);
    databaseOf(request);
    const resend = await resendEvent(store, orgId, request.params.uid, endpoint, { budget: request.databaseBudget });
    return reply.code(202).send(resend);
  });
}

/** The body's optional `endpoint`: none (no body, or `{}`) resends to every endpoint that wants the event. */
function endpointOf(raw: string | undefined): string | undefined {
  if ((raw ?? '').trim() === '') return undefined;
  const body = parseBodyObject(raw, 'endpoint', '{"endpoint": "we_…"}');
  const errors: ParamError[] = refuseUnknownMembers(body, ['endpoint']);
  const value = body.endpoint;
  if (value !== undefined) {
    if (typeof value !== 'string') errors.push({ param: 'endpoint', detail: `endpoint must be a webhook endpoint's id string, got ${typeName(value)}` });
    else if (value.length === 0 || value.length > MAX_ENDPOINT_ID_LENGTH || value.search(ASCII_CONTROL_CHARACTERS) !== -1 || hasLoneSurrogate(value)) {
      errors.push({ param: 'endpoint', detail: `endpoint must be an id of 1–${MAX_ENDPOINT_ID_LENGTH} characters, well-formed, without control characters` });
    }
  }
  if (errors.length > 0) throw ApiError.invalidBody(errors);
  return typeof value === 'string' ? value : undefined;
}
