import type { ErrorCode } from '../domain/errors.js';
import { MAX_LINK_LENGTH } from '../listing/page-links.js';
import { PAGE_SIZE } from '../listing/query-parser.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { MAX_WEBHOOK_URL_LENGTH } from '../webhooks/destination.js';
import { EVENT_TYPES, EVENT_TYPE_PREFIXES, EVERY_EVENT, MAX_ENABLED_EVENTS } from '../events/event-types.js';
import { MAX_DESCRIPTION_LENGTH, MAX_ENDPOINTS_PER_ORGANIZATION, PREVIOUS_SECRET_HOURS } from '../webhooks/webhook-endpoints.js';
import { ATTEMPT_STATUSES, MAX_ATTEMPT_ERROR_LENGTH } from '../webhooks/delivery-attempts.js';
import { eventTypeValue } from '../events/events-resource.js';
import { TEST_EVENT_TYPE } from '../webhooks/test-delivery.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { countSchema, TIMESTAMP_PATTERN } from './resource-schemas.js';
import { errorResponsesByStatus } from './write-operations.js';

/** The tag of every operation here (docs/api.md "Webhook endpoints"). */
export const WEBHOOK_ENDPOINTS_TAG = 'Webhook endpoints';

/** The scope every operation here needs (docs/api.md's endpoint table reads it). */
export const REQUIRED_SCOPE_EXTENSION = 'x-required-scope';

/** What any of them can answer before its own work: credentials, scope, budget, a URL the router cannot read, the database. */
const COMMON: readonly ErrorCode[] = ['bad_request', 'unauthorized', 'insufficient_scope', 'rate_limited', 'internal_error', 'service_unavailable', 'overloaded'];
/** A body-reading operation's refusals of the body itself. */
const BODY: readonly ErrorCode[] = ['invalid_json', 'payload_too_large', 'unsupported_media_type', 'invalid_body'];
/** A transaction whose COMMIT went unconfirmed. */
const WRITTEN: readonly ErrorCode[] = ['outcome_unknown'];

const TIMESTAMP = { type: 'string', format: 'date-time', maxLength: 27, pattern: TIMESTAMP_PATTERN } as const;
const ENDPOINT_ID = { type: 'string', pattern: '^we_[0-9a-f]{32}$', maxLength: 35, examples: ['we_5f0c6b2e7c1a4e5b9a552b1f7d3c9e10'] } as const;
const PATTERNS = [...EVENT_TYPES, ...EVENT_TYPE_PREFIXES, EVERY_EVENT];

const ID_PARAMETER = {
  name: 'uid',
  in: 'path',
  required: true,
  description: 'The webhook endpoint’s id (`we_…`).',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
  example: ENDPOINT_ID.examples[0],
};

const PAGE_PARAMETER = {
  name: 'page',
  in: 'query',
  required: false,
  description: `Page number, from 1, for example \`2\`. Pages hold ${PAGE_SIZE} items; a page past the last one is a 404 \`page_out_of_range\`. The only parameter: any other is a 422 naming it.`,
  schema: { ...countSchema(1), default: 1 },
};

const ATTEMPT_FILTERS = [
  {
    name: 'status',
    in: 'query',
    required: false,
    description: 'Only attempts with this outcome: `succeeded` (a 2xx answer) or `failed` (anything else: the attempt has an `error`, whether a retry follows or not). Another value is a 422 naming `status`.',
    schema: { type: 'string', enum: [...ATTEMPT_STATUSES] },
  },
  {
    name: 'type',
    in: 'query',
    required: false,
    description: 'Only attempts of events of this type, or of every type of one object (`credit_limit.*`), as the events log’s `type` filter reads it. Another value is a 422 naming `type`.',
    schema: JSON.parse(JSON.stringify(eventTypeValue.schema)) as JsonObject,
  },
];

const ATTEMPT_PAGE_PARAMETER = { ...PAGE_PARAMETER, description: `Page number, from 1, for example \`2\`. Pages hold ${PAGE_SIZE} items; a page past the last one is a 404 \`page_out_of_range\`. With \`status\` and \`type\` the only parameters: any other is a 422 naming it.` };

const HEADERS = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };

function ok(description: string, schema: string, status = 200, extraHeaders: JsonObject = {}): Record<string, JsonObject> {
  return { [status]: { description, headers: { ...HEADERS, ...extraHeaders }, content: { 'application/json': { schema: schemaRef(schema) } } } };
}

function operation(operationId: string, summary: string, description: string, parts: JsonObject): JsonObject {
  return { operationId, tags: [WEBHOOK_ENDPOINTS_TAG], summary, description: `${description} Needs an API key with the \`webhooks\` scope (another key gets 403 \`insufficient_scope\`).`, [REQUIRED_SCOPE_EXTENSION]: 'webhooks', ...parts };
}

function body(schema: string | JsonObject, example: JsonObject, required = true): JsonObject {
  return {
    required,
    description: `A JSON object of at most ${MAX_WRITE_BODY_BYTES} bytes; any other member is a 422.`,
    content: { 'application/json': { schema: typeof schema === 'string' ? schemaRef(schema) : schema, example } },
  };
}

/** The paths of the webhook endpoints (src/http/webhook-endpoint-routes.ts). */
export function webhookEndpointPaths(): Record<string, JsonObject> {
  const secretNote = 'The answer carries the signing `secret` (`whsec_…`): it is shown only here, stored encrypted, never listed or logged.';
  return {
    '/api/webhook_endpoints/': {
      get: operation('listWebhookEndpoints', 'List webhook endpoints', `Your organization's webhook endpoints, oldest first (at most ${MAX_ENDPOINTS_PER_ORGANIZATION}), without their secrets.`, {
        parameters: [PAGE_PARAMETER],
        responses: { ...ok('A page of webhook endpoints.', 'WebhookEndpointPage', 200, { Link: { $ref: '#/components/headers/Link' } }), ...errorResponsesByStatus([...COMMON, 'invalid_parameter', 'page_out_of_range']) },
      }),
      post: operation(
        'createWebhookEndpoint',
        'Create a webhook endpoint',
        `Events whose type \`enabled_events\` takes are POSTed to \`url\`, signed (Standard Webhooks). ${secretNote} The URL must be \`https://\` and not name a private, loopback, link-local or metadata address unless the operator allows it (a 422 naming \`url\` says why). At most ${MAX_ENDPOINTS_PER_ORGANIZATION} per organization (409 \`webhook_endpoint_limit\`). Without WEBHOOK_SECRET_KEY on the server: 503 \`webhook_secret_key_missing\`. No Idempotency-Key: after a 504 \`outcome_unknown\`, list the endpoints before retrying.`,
        {
          requestBody: body('WebhookEndpointInput', { url: 'https://example.com/webhooks', enabled_events: ['loan.*', 'credit_limit.updated'], description: 'Loan book sync' }),
          responses: { ...ok('The endpoint, with its signing secret (this once).', 'WebhookEndpointWithSecret', 201), ...errorResponsesByStatus([...COMMON, ...BODY, 'webhook_endpoint_limit', 'webhook_secret_key_missing', ...WRITTEN]) },
        },
      ),
    },
    '/api/webhook_endpoints/{uid}/': {
      get: operation('retrieveWebhookEndpoint', 'Retrieve a webhook endpoint', 'One endpoint of your organization, without its secret. The URL takes no query parameters.', {
        parameters: [ID_PARAMETER],
        responses: { ...ok('The endpoint.', 'WebhookEndpoint'), ...errorResponsesByStatus([...COMMON, 'invalid_parameter', 'not_found']) },
      }),
      post: operation(
        'updateWebhookEndpoint',
        'Update a webhook endpoint',
        'Changes the members given: `url`, `enabled_events`, `description` (`null` clears it), `disabled`. Disabling sets `disabled_reason` to `requested`; enabling clears the reason. Pending deliveries the endpoint no longer takes (disabled, or a type no longer enabled) are cancelled.',
        {
          parameters: [ID_PARAMETER],
          requestBody: body('WebhookEndpointUpdate', { disabled: true }),
          responses: { ...ok('The endpoint after the change.', 'WebhookEndpoint'), ...errorResponsesByStatus([...COMMON, ...BODY, 'not_found', ...WRITTEN]) },
        },
      ),
      delete: operation('deleteWebhookEndpoint', 'Delete a webhook endpoint', 'Deletes the endpoint; its pending deliveries are cancelled in the same transaction.', {
        parameters: [ID_PARAMETER],
        responses: {
          204: { description: 'Deleted.', headers: HEADERS },
          ...errorResponsesByStatus([...COMMON, 'invalid_json', 'payload_too_large', 'unsupported_media_type', 'not_found', ...WRITTEN]),
        },
      }),
    },
    '/api/webhook_endpoints/{uid}/rotate_secret/': {
      post: operation(
        'rotateWebhookEndpointSecret',
        'Rotate a webhook endpoint’s signing secret',
        `A new signing secret; the one it replaces keeps signing beside it for ${PREVIOUS_SECRET_HOURS} hours (deliveries carry both signatures), so receivers can switch without a gap. ${secretNote} Without WEBHOOK_SECRET_KEY on the server: 503 \`webhook_secret_key_missing\`.`,
        {
          parameters: [ID_PARAMETER],
          requestBody: body({ description: 'No member: send `{}` or no body.', type: 'object', maxProperties: 0, additionalProperties: false }, {}, false),
          responses: { ...ok('The endpoint, with its new signing secret (this once).', 'WebhookEndpointWithSecret'), ...errorResponsesByStatus([...COMMON, ...BODY, 'not_found', 'webhook_secret_key_missing', ...WRITTEN]) },
        },
      ),
    },
    '/api/webhook_endpoints/{uid}/replay/': {
      post: operation(
        'replayWebhookEndpoint',
        'Replay failed deliveries',
        'Sends again, once each, every event whose last attempt to the endpoint between `since` and `until` (inclusive; default now) failed and that is neither waiting for it (a retry is scheduled, or an earlier replay or resend is not yet made) nor delivered to it since. The times are read as the lists’ `created_from` / `created_to` (µs precision; a date alone is its whole day in UTC); `until` before `since` is a 422. A second replay while the first one’s deliveries wait adds nothing. A disabled endpoint is a 422: enable it first.',
        {
          parameters: [ID_PARAMETER],
          requestBody: body('WebhookEndpointReplayInput', { since: '2026-11-28T00:00:00Z', until: '2026-11-28T12:00:00Z' }),
          responses: { ...ok('Queued: how many events go to the endpoint again.', 'WebhookEndpointReplay', 202), ...errorResponsesByStatus([...COMMON, ...BODY, 'not_found', ...WRITTEN]) },
        },
      ),
    },
    '/api/webhook_endpoints/{uid}/test/': {
      post: operation(
        'testWebhookEndpoint',
        'Send a test delivery',
        `POSTs a \`${TEST_EVENT_TYPE}\` event (its \`data.object\` the endpoint) to the endpoint now, signed, bounded by the delivery deadline and refused the addresses a delivery is refused, and answers with the outcome once the receiver has answered (10 s at most). Not an event of the log and not recorded: no attempt is listed and the endpoint’s \`health\` does not change. A disabled endpoint is tested too. Without WEBHOOK_SECRET_KEY on the server: 503 \`webhook_secret_key_missing\`.`,
        {
          parameters: [ID_PARAMETER],
          requestBody: body({ description: 'No member: send `{}` or no body.', type: 'object', maxProperties: 0, additionalProperties: false }, {}, false),
          responses: { ...ok('What the receiver answered (or why it did not).', 'WebhookEndpointTest'), ...errorResponsesByStatus([...COMMON, ...BODY, 'not_found', 'webhook_secret_key_missing']) },
        },
      ),
    },
    '/api/webhook_endpoints/{uid}/deliveries/': {
      get: operation('listWebhookDeliveryAttempts', 'List a webhook endpoint’s delivery attempts', 'Every attempt to deliver an event to the endpoint, newest first, or those of one outcome (`status`) or event type (`type`), with their exact `count`: the event and its type, the attempt’s number, the status code, how long it took, the error, the first 1 KiB of the answer and when the next attempt is due.', {
        parameters: [ID_PARAMETER, ATTEMPT_PAGE_PARAMETER, ...ATTEMPT_FILTERS],
        responses: { ...ok('A page of delivery attempts.', 'WebhookDeliveryAttemptPage', 200, { Link: { $ref: '#/components/headers/Link' } }), ...errorResponsesByStatus([...COMMON, 'invalid_parameter', 'not_found', 'page_out_of_range']) },
      }),
    },
  };
}

const ENABLED_EVENTS = {
  type: 'array',
  minItems: 1,
  maxItems: MAX_ENABLED_EVENTS,
  items: { type: 'string', enum: PATTERNS },
  description: `Event types, \`prefix.*\` (every type of one object) or \`*\` (every type, those added later included).`,
  examples: [['loan.*', 'credit_limit.updated']],
};
const DESCRIPTION = { type: ['string', 'null'], pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]+$', minLength: 1, maxLength: MAX_DESCRIPTION_LENGTH, description: 'Your note about the endpoint; null for none.' };
const URL_SCHEMA = { type: 'string', format: 'uri', minLength: 1, maxLength: MAX_WEBHOOK_URL_LENGTH, description: 'Where events are POSTed: `https://` (plain `http://` and private addresses only where the operator allows them).', examples: ['https://example.com/webhooks'] };

const ENDPOINT_PROPERTIES = {
  id: ENDPOINT_ID,
  object: { const: 'webhook_endpoint' },
  url: URL_SCHEMA,
  description: DESCRIPTION,
  enabled_events: { ...ENABLED_EVENTS, uniqueItems: true },
  disabled: { type: 'boolean', description: 'A disabled endpoint gets no deliveries.' },
  disabled_reason: { enum: ['failing', 'requested', null], description: '`failing`: every attempt failed for 3 days; `requested`: disabled through the API; null while enabled.' },
  created_at: TIMESTAMP,
  updated_at: TIMESTAMP,
  health: schemaRef('WebhookEndpointHealth'),
};
const ENDPOINT_REQUIRED = Object.keys(ENDPOINT_PROPERTIES);

function pageOf(name: string, items: string, path: string): JsonObject {
  const link = (which: 'next' | 'previous') => ({
    type: ['string', 'null'],
    format: 'uri',
    maxLength: MAX_LINK_LENGTH,
    description: `Absolute URL of the ${which} page; null on the ${which === 'next' ? 'last' : 'first'} page.`,
    examples: [`https://api.example.com${path}?page=${which === 'next' ? 3 : 1}`],
  });
  return {
    title: name,
    description: `One page: at most ${PAGE_SIZE} items, and the exact count.`,
    type: 'object',
    required: ['count', 'next', 'previous', 'items'],
    properties: { count: { ...countSchema(0), description: 'Exact number of items.' }, next: link('next'), previous: link('previous'), items: { type: 'array', maxItems: PAGE_SIZE, items: schemaRef(items) } },
    additionalProperties: false,
  };
}

/** The schemas the operations refer to. */
export function webhookEndpointSchemas(): Record<string, JsonObject> {
  return {
    WebhookEndpoint: {
      title: 'WebhookEndpoint',
      description: 'Where and which events are delivered. Never its secret.',
      type: 'object',
      required: ENDPOINT_REQUIRED,
      properties: ENDPOINT_PROPERTIES,
      additionalProperties: false,
    },
    WebhookEndpointWithSecret: {
      title: 'WebhookEndpointWithSecret',
      description: 'An endpoint as created or rotated: with its signing secret, shown this once.',
      type: 'object',
      required: [...ENDPOINT_REQUIRED, 'secret'],
      properties: {
        ...ENDPOINT_PROPERTIES,
        secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]{43}=$', maxLength: 50, description: 'The signing secret (Standard Webhooks): verify each delivery’s `webhook-signature` with it.' },
      },
      additionalProperties: false,
    },
    WebhookEndpointHealth: {
      title: 'WebhookEndpointHealth',
      description: 'How the endpoint’s deliveries are going: what waits, when it was last tried and last answered 2xx, since when it fails, and the last 24 hours’ attempts.',
      type: 'object',
      required: ['pending', 'last_attempt_at', 'last_success_at', 'failing_since', 'succeeded_24h', 'failed_24h', 'hourly_24h'],
      properties: {
        pending: { ...countSchema(0), description: 'Deliveries waiting for an attempt (due now or a retry later), in flight included.' },
        last_attempt_at: { ...TIMESTAMP, type: ['string', 'null'], description: 'When the latest attempt was recorded; null before the first.' },
        last_success_at: { ...TIMESTAMP, type: ['string', 'null'], description: 'When the latest successful attempt was recorded; null if none was.' },
        failing_since: { ...TIMESTAMP, type: ['string', 'null'], description: 'The first failed attempt since the last success; null while the last attempt succeeded (or none was made).' },
        succeeded_24h: { ...countSchema(0), description: 'Successful attempts in the last 24 hours (counted in 5-minute buckets: those that began in the last 24 hours).' },
        failed_24h: { ...countSchema(0), description: 'Failed attempts in the last 24 hours (as `succeeded_24h`).' },
        hourly_24h: {
          type: 'array',
          minItems: 24,
          maxItems: 24,
          description: 'Attempts by UTC hour: the current hour (so far) and the 23 before it, oldest first, an hour without attempts included with zeros (from the same 5-minute buckets, so the oldest hour may hold attempts `succeeded_24h` no longer counts).',
          items: {
            type: 'object',
            required: ['hour', 'succeeded', 'failed'],
            properties: {
              hour: { type: 'string', format: 'date-time', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:00:00Z$', maxLength: 20, description: 'The hour’s start, UTC.', examples: ['2026-11-28T03:00:00Z'] },
              succeeded: { ...countSchema(0), description: 'Successful attempts in the hour.' },
              failed: { ...countSchema(0), description: 'Failed attempts in the hour.' },
            },
            additionalProperties: false,
          },
        },
      },
      additionalProperties: false,
    },
    WebhookEndpointReplayInput: {
      title: 'WebhookEndpointReplayInput',
      type: 'object',
      required: ['since'],
      properties: {
        since: { type: 'string', minLength: 10, maxLength: 35, description: 'Inclusive: attempts at or after it (RFC 3339, or a date: its first microsecond).', examples: ['2026-11-28T00:00:00Z'] },
        until: { type: 'string', minLength: 10, maxLength: 35, description: 'Inclusive: attempts at or before it (RFC 3339, or a date: its last microsecond); default now. Not before `since`.', examples: ['2026-11-28T12:00:00Z'] },
      },
      additionalProperties: false,
    },
    WebhookEndpointReplay: {
      title: 'WebhookEndpointReplay',
      description: 'What a replay queued.',
      type: 'object',
      required: ['object', 'endpoint', 'since', 'until', 'count', 'has_more'],
      properties: {
        object: { const: 'webhook_endpoint_replay' },
        endpoint: ENDPOINT_ID,
        since: { ...TIMESTAMP, description: 'The window’s start, as applied (UTC, µs).' },
        until: { ...TIMESTAMP, description: 'The window’s end, as applied: the request’s time when none was given.' },
        count: { ...countSchema(0), description: 'Events queued for the endpoint again, each once (at most 10,000 a replay).' },
        has_more: { type: 'boolean', description: 'More events of the window are still to queue: send the same replay again to queue the next ones.' },
      },
      additionalProperties: false,
    },
    WebhookEndpointTest: {
      title: 'WebhookEndpointTest',
      description: 'The outcome of a test delivery.',
      type: 'object',
      required: ['object', 'endpoint', 'event', 'ok', 'status_code', 'duration_ms', 'error', 'response_body'],
      properties: {
        object: { const: 'webhook_endpoint_test' },
        endpoint: ENDPOINT_ID,
        event: { type: 'string', pattern: '^evt_test_[0-9a-f]{32}$', maxLength: 41, description: 'The test delivery’s `webhook-id` (and its body’s `id`): in no log.' },
        ok: { type: 'boolean', description: 'The receiver answered 2xx within the deadline.' },
        status_code: { type: ['integer', 'null'], format: 'int32', minimum: 100, maximum: 599, description: 'The receiver’s status; null when none came.' },
        duration_ms: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647 },
        error: { type: ['string', 'null'], maxLength: MAX_ATTEMPT_ERROR_LENGTH, description: 'Why it failed; null on success.' },
        response_body: { type: ['string', 'null'], maxLength: 1024, description: 'The first 1 KiB of the receiver’s answer.' },
      },
      additionalProperties: false,
    },
    WebhookEndpointPage: pageOf('WebhookEndpointPage', 'WebhookEndpoint', '/api/webhook_endpoints/'),
    WebhookEndpointInput: {
      title: 'WebhookEndpointInput',
      type: 'object',
      required: ['url', 'enabled_events'],
      properties: { url: URL_SCHEMA, enabled_events: ENABLED_EVENTS, description: DESCRIPTION },
      additionalProperties: false,
    },
    WebhookEndpointUpdate: {
      title: 'WebhookEndpointUpdate',
      type: 'object',
      minProperties: 1,
      properties: { url: URL_SCHEMA, enabled_events: ENABLED_EVENTS, description: DESCRIPTION, disabled: { type: 'boolean', description: 'true disables the endpoint; false enables it again.' } },
      additionalProperties: false,
    },
    WebhookDeliveryAttempt: {
      title: 'WebhookDeliveryAttempt',
      description: 'One attempt to deliver one event to the endpoint.',
      type: 'object',
      required: ['id', 'object', 'event', 'event_type', 'attempt', 'status_code', 'duration_ms', 'error', 'response_body', 'next_attempt_at', 'created_at'],
      properties: {
        id: { type: 'string', pattern: '^wha_[0-9a-f]{32}$', maxLength: 36 },
        object: { const: 'webhook_delivery_attempt' },
        event: { type: 'string', pattern: '^evt_[0-9a-f]{32}$', maxLength: 36, description: 'The event’s id (`evt_…`), its `webhook-id`.' },
        event_type: { type: ['string', 'null'], enum: [...EVENT_TYPES, null], description: 'The event’s type; null once the event has left the log (pruned before its attempts).' },
        attempt: { type: 'integer', format: 'int32', minimum: 1, maximum: 1000, description: 'The attempt’s number for this event, from 1.' },
        status_code: { type: ['integer', 'null'], format: 'int32', minimum: 100, maximum: 599, description: 'The receiver’s status; null when none came (timeout, refused connection, refused address).' },
        duration_ms: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647 },
        error: { type: ['string', 'null'], maxLength: MAX_ATTEMPT_ERROR_LENGTH, description: `Why the attempt failed (its first ${MAX_ATTEMPT_ERROR_LENGTH} characters); null on success.` },
        response_body: { type: ['string', 'null'], maxLength: 1024, description: 'The first 1 KiB of the receiver’s answer.' },
        next_attempt_at: { ...TIMESTAMP, type: ['string', 'null'], description: 'When the next attempt is due; null when none follows (delivered, or given up).' },
        created_at: TIMESTAMP,
      },
      additionalProperties: false,
    },
    WebhookDeliveryAttemptPage: pageOf('WebhookDeliveryAttemptPage', 'WebhookDeliveryAttempt', '/api/webhook_endpoints/we_5f0c6b2e7c1a4e5b9a552b1f7d3c9e10/deliveries/'),
  };
}
