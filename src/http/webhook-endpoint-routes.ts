import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { requireAuth } from '../auth/basic-auth-hook.js';
import { ApiError } from '../domain/errors.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import type { Store, TransactionOptions } from '../store/store.js';
import { TransactionInterruptedError } from '../store/transaction-interrupted.js';
import { listDeliveryAttempts } from '../webhooks/delivery-attempts.js';
import type { DestinationPolicy } from '../webhooks/destination.js';
import { replayFailedEvents } from '../webhooks/endpoint-replay.js';
import type { SecretBox } from '../webhooks/secret-box.js';
import { sendTestDelivery } from '../webhooks/test-delivery.js';
import { createEndpoint, deleteEndpoint, listEndpoints, retrieveEndpoint, rotateEndpointSecret, updateEndpoint } from '../webhooks/webhook-endpoints.js';
import { parseDeliveryAttemptQuery } from './delivery-attempt-query.js';
import { numberedPageEnvelope, parseNumberedPage } from './numbered-page.js';
import { publicBaseUrl } from './public-url.js';
import { parseReplayWindow } from './replay-body.js';
import type { DatabaseOf } from './request-database.js';
import { scopedJsonRoutes } from './scoped-json-routes.js';
import { parseEndpointCreation, parseEndpointUpdate, parseRotation } from './webhook-endpoint-body.js';
import { presentedCredentialOf } from './presented-credential.js';

export const WEBHOOK_ENDPOINTS_PATH = '/api/webhook_endpoints/';

export interface WebhookEndpointRoutesOptions {
  readonly store: Store;
  readonly databaseOf: DatabaseOf;
  readonly publicUrl: string | undefined;
  readonly authCache?: AuthCache | undefined;
  /** Seals and opens signing secrets (WEBHOOK_SECRET_KEY); undefined: creation and rotation answer 503. */
  readonly secretBox: SecretBox | undefined;
  /** Where endpoint URLs may point (WEBHOOK_ALLOW_PRIVATE, WEBHOOK_ALLOWED_HOSTS). */
  readonly destinations: DestinationPolicy;
}

/**
 * The organization's webhook endpoints (SPEC §3c, docs/api.md "Webhook
 * endpoints"): create, list, retrieve, update, delete, rotate the signing
 * secret, list delivery attempts, replay failed deliveries and send a test
 * delivery. Every route needs a key with the
 * `webhooks` scope (another key: 403, before any body is read). A secret is
 * answered twice in an endpoint's life at most: by its creation and by a
 * rotation; never by a list, a retrieval, or a log line. No Idempotency-Key:
 * a replay would have to store the secret in clear.
 */
export async function webhookEndpointRoutes(app: FastifyInstance, options: WebhookEndpointRoutesOptions): Promise<void> {
  const { store, databaseOf, publicUrl, secretBox, destinations } = options;

  scopedJsonRoutes(app, {
    databaseOf,
    authCache: options.authCache,
    scope: 'webhooks',
    refusal: 'managing webhook endpoints needs an API key created with `key create --scope webhooks`',
    budget: 'reads',
  });

  // A NUL cannot be in any id, and PostgreSQL refuses it in a text parameter: no such endpoint.
  app.addHook('preHandler', (request, _reply, done) => {
    const { uid } = (request.params ?? {}) as { uid?: string };
    if (uid?.includes('\u0000')) notFound(uid);
    done();
  });

  const withBody = { bodyLimit: MAX_WRITE_BODY_BYTES, config: { readsBody: true } };
  const requireBox = (): SecretBox => {
    if (secretBox) return secretBox;
    throw new ApiError(
      'webhook_secret_key_missing',
      'WEBHOOK_SECRET_KEY is not set on this server, so signing secrets cannot be stored: the operator must set it (32 random bytes, base64 or hex) and restart; nothing was changed',
    );
  };
  /** The request's budget bounds its transaction, as a write's (DATABASE_REQUEST_BUDGET_MS). */
  const transactionOf = (request: FastifyRequest): TransactionOptions => {
    databaseOf(request);
    return { budget: request.databaseBudget };
  };
  const bodyText = (request: FastifyRequest) => (typeof request.body === 'string' ? request.body : undefined);

  app.post(WEBHOOK_ENDPOINTS_PATH, withBody, async (request, reply) => {
    const { orgId } = requireAuth(request);
    const box = requireBox();
    const input = parseEndpointCreation(bodyText(request), destinations, presentedCredentialOf(request.headers.authorization));
    const { endpoint, secret } = await committed(createEndpoint(store, orgId, input, box, transactionOf(request)), 'created');
    return reply.code(201).send({ ...endpoint, secret });
  });

  app.get(WEBHOOK_ENDPOINTS_PATH, async (request, reply) => {
    const { orgId } = requireAuth(request);
    const query = parseNumberedPage(rawQueryOf(request), WEBHOOK_ENDPOINTS_PATH);
    const result = await listEndpoints(databaseOf(request), orgId, query.offset, query.limit);
    return numberedPageEnvelope(reply, `${publicBaseUrl(request, publicUrl)}${WEBHOOK_ENDPOINTS_PATH}`, query, result);
  });

  app.get<{ Params: { uid: string } }>(`${WEBHOOK_ENDPOINTS_PATH}:uid/`, async (request) => {
    const { orgId } = requireAuth(request);
    refuseQuery(request);
    return (await retrieveEndpoint(databaseOf(request), orgId, request.params.uid)) ?? notFound(request.params.uid);
  });

  app.post<{ Params: { uid: string } }>(`${WEBHOOK_ENDPOINTS_PATH}:uid/`, withBody, async (request) => {
    const { orgId } = requireAuth(request);
    const changes = parseEndpointUpdate(bodyText(request), destinations, presentedCredentialOf(request.headers.authorization));
    return (await committed(updateEndpoint(store, orgId, request.params.uid, changes, transactionOf(request)), 'updated')) ?? notFound(request.params.uid);
  });

  app.delete<{ Params: { uid: string } }>(`${WEBHOOK_ENDPOINTS_PATH}:uid/`, { bodyLimit: MAX_WRITE_BODY_BYTES }, async (request, reply) => {
    const { orgId } = requireAuth(request);
    const deleted = await committed(deleteEndpoint(store, orgId, request.params.uid, transactionOf(request)), 'deleted');
    if (!deleted) notFound(request.params.uid);
    return reply.code(204).send();
  });

  app.post<{ Params: { uid: string } }>(`${WEBHOOK_ENDPOINTS_PATH}:uid/rotate_secret/`, withBody, async (request) => {
    const { orgId } = requireAuth(request);
    const box = requireBox();
    parseRotation(bodyText(request));
    const rotated = await committed(rotateEndpointSecret(store, orgId, request.params.uid, box, transactionOf(request)), 'rotated');
    if (!rotated) return notFound(request.params.uid);
    return { ...rotated.endpoint, secret: rotated.secret };
  });

  app.get<{ Params: { uid: string } }>(`${WEBHOOK_ENDPOINTS_PATH}:uid/deliveries/`, async (request, reply) => {
    const { orgId } = requireAuth(request);
    const path = `${WEBHOOK_ENDPOINTS_PATH}${encodeURIComponent(request.params.uid)}/deliveries/`;
    const { page, filters } = parseDeliveryAttemptQuery(rawQueryOf(request), `${WEBHOOK_ENDPOINTS_PATH}{uid}/deliveries/`);
    const result = await listDeliveryAttempts(databaseOf(request), orgId, request.params.uid, page, filters);
    if (!result) return notFound(request.params.uid);
    return numberedPageEnvelope(reply, `${publicBaseUrl(request, publicUrl)}${path}`, page, result);
  });

  app.post<{ Params: { uid: string } }>(`${WEBHOOK_ENDPOINTS_PATH}:uid/replay/`, withBody, async (request, reply) => {
    const { orgId } = requireAuth(request);
    const window = parseReplayWindow(bodyText(request));
    const replay = await replayFailedEvents(store, orgId, request.params.uid, window, transactionOf(request));
    if (replay === 'not_found') return notFound(request.params.uid);
    if (replay === 'disabled') {
      throw ApiError.invalidBody([{ param: 'endpoint', detail: `the webhook endpoint '${request.params.uid.slice(0, 80)}' is disabled: enable it first (POST it with "disabled": false)` }]);
    }
    return reply.code(202).send(replay);
  });

  app.post<{ Params: { uid: string } }>(`${WEBHOOK_ENDPOINTS_PATH}:uid/test/`, withBody, async (request) => {
    const { orgId } = requireAuth(request);
    const box = requireBox();
    parseRotation(bodyText(request));
    const tested = await sendTestDelivery(databaseOf(request), orgId, request.params.uid, { box, policy: destinations, requestId: request.id });
    return tested ?? notFound(request.params.uid);
  });
}

function notFound(id: string): never {
  throw new ApiError('not_found', `no webhook endpoint with id '${id.slice(0, 80)}' in your organization`);
}

/**
 * A transaction's result, or what its failure means for the client: a
 * COMMIT sent and never confirmed is `outcome_unknown` (it may have been
 * done: look before retrying, as no Idempotency-Key replays it); anything
 * else as thrown (unreachable database: 503, nothing was done).
 */
async function committed<T>(transaction: Promise<T>, done: string): Promise<T> {
  try {
    return await transaction;
  } catch (error) {
    if (error instanceof TransactionInterruptedError && error.outcomeUnknown) {
      throw new ApiError(
        'outcome_unknown',
        `the database did not confirm the commit: the endpoint may or may not have been ${done}; list or retrieve your endpoints to see which before retrying`,
        { headers: { 'retry-after': '1' }, cause: error },
      );
    }
    throw error;
  }
}

function refuseQuery(request: FastifyRequest): void {
  const names = [...new Set(new URLSearchParams(rawQueryOf(request)).keys())];
  if (names.length > 0) throw ApiError.invalidParameters(names.map((param) => ({ param, detail: `'${param.slice(0, 80)}' is not a parameter: an endpoint's URL takes none` })));
}

function rawQueryOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const start = url.indexOf('?');
  return start === -1 ? '' : url.slice(start + 1);
}
