import { API_VERSION } from '../domain/api-version.js';
import type { ErrorCode } from '../domain/errors.js';
import { EVENT_OBJECTS, EVENT_TYPES_BY_OBJECT } from '../events/event-types.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { listParameters, pageSchema, pageSchemaName, recordSchema, TIMESTAMP_PATTERN, uidParameter } from './resource-schemas.js';
import { errorResponsesByStatus } from './write-operations.js';

/** What a resend can answer besides its 202 (it reads its body like a write, but takes no Idempotency-Key). */
const RESEND_ERRORS = [
  'bad_request',
  'invalid_json',
  'unauthorized',
  'insufficient_scope',
  'not_found',
  'payload_too_large',
  'unsupported_media_type',
  'invalid_body',
  'rate_limited',
  'internal_error',
  'service_unavailable',
  'overloaded',
] as const satisfies readonly ErrorCode[];

/** What opening a stream can answer besides its 200. */
const STREAM_ERRORS = ['bad_request', 'invalid_parameter', 'unauthorized', 'rate_limited', 'internal_error', 'service_unavailable', 'overloaded'] as const satisfies readonly ErrorCode[];
/** The log's parameters the stream takes (src/events/event-stream-reader.ts). */
const STREAM_PARAMETERS = ['type', 'object', 'created_from'];

const ID_PATTERN = '^[A-Za-z0-9_-]+$';
const NULLABLE_TEXT = { type: ['string', 'null'], maxLength: 255, pattern: '^[^\\u0000-\\u001f\\u007f]*$' } as const;

/** `CreditLimit` → `CreditLimitEvent`: an event about one kind of record. */
function eventSchemaName(resource: ResourceDefinition): string {
  return `${resource.schemaName}Event`;
}

/** The event of one object type: its types, data.object that record's schema, previous_attributes any of its fields. */
function objectEventSchema(resource: ResourceDefinition, types: readonly string[]): JsonObject {
  const record = recordSchema(resource);
  return {
    title: eventSchemaName(resource),
    description: `An event about ${resource.name === 'entity' ? 'an' : 'a'} ${resource.name}: ${types.map((type) => `\`${type}\``).join(', ')}.`,
    type: 'object',
    required: ['id', 'object', 'type', 'created_at', 'api_version', 'data', 'request_id', 'idempotency_key', 'import_id'],
    properties: {
      id: { type: 'string', maxLength: 255, pattern: '^evt_[0-9a-f]+$', description: "The event's id; the `webhook-id` of its deliveries.", examples: ['evt_0123456789abcdef0123456789abcdef'] },
      object: { const: 'event' },
      type: { type: 'string', enum: [...types], description: 'What happened.' },
      created_at: {
        type: 'string',
        format: 'date-time',
        maxLength: 27,
        pattern: TIMESTAMP_PATTERN,
        description: 'When the event entered the log: RFC 3339, UTC, six fractional digits; strictly increasing in your organization.',
      },
      api_version: { type: 'string', maxLength: 10, pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'The API version the event is rendered in.', examples: [API_VERSION] },
      data: {
        type: 'object',
        required: ['object'],
        properties: {
          object: { ...schemaRef(resource.schemaName), description: `The ${resource.name} exactly as GET renders it right after the change.` },
          previous_attributes: {
            type: 'object',
            description: 'On `*.updated` and `loan.repaid` only: the fields that changed, with their values before the change.',
            // The record's own field schemas, by reference: one definition of each field.
            properties: Object.fromEntries(Object.keys(record.properties as JsonObject).map((name) => [name, { $ref: `#/components/schemas/${resource.schemaName}/properties/${name}` }])),
            additionalProperties: false,
          },
        },
        additionalProperties: false,
      },
      request_id: { ...NULLABLE_TEXT, description: 'The X-Request-Id of the request that caused the change; null for the CLI and the import.' },
      idempotency_key: { ...NULLABLE_TEXT, description: 'The Idempotency-Key of the request that caused the change; null for the CLI and the import.' },
      import_id: { ...NULLABLE_TEXT, description: 'The import that caused the change; null otherwise.' },
    },
    additionalProperties: false,
  };
}

/** Event, one schema per object type, EventPage and EventResend. */
export function eventSchemas(events: ResourceDefinition): Record<string, JsonObject> {
  const objects = Object.entries(EVENT_OBJECTS);
  return {
    ...Object.fromEntries(objects.map(([object, resource]) => [eventSchemaName(resource), objectEventSchema(resource, EVENT_TYPES_BY_OBJECT[object] ?? [])])),
    [events.schemaName]: {
      title: events.schemaName,
      description: events.description,
      oneOf: objects.map(([, resource]) => schemaRef(eventSchemaName(resource))),
    },
    [pageSchemaName(events)]: pageSchema(events),
    EventResendInput: {
      title: 'EventResendInput',
      description: 'Optional: the one endpoint to resend to.',
      type: 'object',
      properties: { endpoint: { type: 'string', minLength: 1, maxLength: 255, pattern: ID_PATTERN, description: 'Id of one of your webhook endpoints (`we_…`): the event goes to it alone, even if it no longer wants the event.' } },
      additionalProperties: false,
    },
    EventResend: {
      title: 'EventResend',
      description: 'The deliveries a resend queued: one per endpoint, due now.',
      type: 'object',
      required: ['object', 'event', 'endpoints'],
      properties: {
        object: { const: 'event_resend' },
        event: { type: 'string', maxLength: 255, pattern: ID_PATTERN, description: 'The event resent.' },
        endpoints: {
          type: 'array',
          maxItems: 16,
          items: { type: 'string', maxLength: 255, pattern: ID_PATTERN },
          description: 'Ids of the endpoints it goes to again (empty: no enabled endpoint wants it).',
        },
      },
      additionalProperties: false,
    },
  };
}

/** `POST /api/events/{uid}/resend/`, keyed by path. */
export function resendPath(events: ResourceDefinition): Record<string, JsonObject> {
  return {
    [`/api/${events.path}/{uid}/resend/`]: {
      post: {
        operationId: 'resendEvent',
        tags: ['Events'],
        summary: 'Resend an event',
        description:
          'Sends the event again, now: to every enabled webhook endpoint whose `enabled_events` take it, or, with `{"endpoint": "we_…"}`, to that endpoint alone (even if it no longer wants the event; a disabled one is a 422). An endpoint the event already waits for (a retry is scheduled) gets no second delivery: that one’s next attempt is brought forward to now. An unknown event or endpoint is a 404. Needs an API key with the `webhooks` scope (another key gets 403 `insufficient_scope`). Takes no Idempotency-Key: resending again while it waits adds nothing (receivers drop duplicates by `webhook-id`).',
        'x-required-scope': 'webhooks',
        parameters: [uidParameter(events)],
        requestBody: {
          required: false,
          description: `Optional: a JSON object of at most ${MAX_WRITE_BODY_BYTES} bytes; any other member is a 422.`,
          content: { 'application/json': { schema: schemaRef('EventResendInput'), example: { endpoint: 'we_0123456789abcdef' } } },
        },
        responses: {
          202: {
            description: 'Queued: the endpoints the event goes to again.',
            headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
            content: { 'application/json': { schema: schemaRef('EventResend') } },
          },
          ...errorResponsesByStatus(RESEND_ERRORS),
        },
      },
    },
  };
}

/** `GET /api/events/stream/`, keyed by path: the log as Server-Sent Events. */
export function streamPath(events: ResourceDefinition): Record<string, JsonObject> {
  return {
    [`/api/${events.path}/stream/`]: {
      get: {
        operationId: 'streamEvents',
        tags: ['Events'],
        summary: 'Follow the log as Server-Sent Events',
        description:
          'The log as a `text/event-stream` (any key): each event as `id: <event id>`, `event: <type>`, `data: <the event exactly as GET /api/events/{id}/ renders it>`, oldest first, with the cursor walk\'s guarantee (no event missed, even one committed late). It starts after the event `Last-Event-ID` names (a reconnect), else at `created_from`, else at the end of the log (new events only). A comment line every 15 s keeps it open; a reader that takes nothing for 30 s while events wait is disconnected (it reconnects with `Last-Event-ID`). Opening one is one request against the key\'s rate budget; a key has at most 4 open on a node (429 beyond). An unknown `Last-Event-ID` (pruned, or not this organization\'s) is a 422 naming it.',
        parameters: [
          ...listParameters(events).filter((parameter) => STREAM_PARAMETERS.includes(String(parameter.name))),
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            description: 'The id of the last event received: the stream starts after it (an EventSource sends it by itself when it reconnects).',
            schema: { type: 'string', maxLength: 255, pattern: '^[\\x21-\\x7e]*$', examples: ['evt_0123456789abcdef0123456789abcdef'] },
          },
        ],
        responses: {
          200: {
            description: 'The stream: Server-Sent Events, until the reader closes it, is disconnected, or the node shuts down.',
            headers: {
              'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
              'X-Accel-Buffering': { description: '`no`: a proxy that buffers answers (nginx) passes this one on as it comes.', required: true, schema: { type: 'string', const: 'no' } },
            },
            content: {
              'text/event-stream': {
                // No `type: string` with a maxLength: a stream has no length; its events are the Event schema, one a `data` line.
                schema: { description: 'Server-Sent Events, unbounded: `id`, `event` and `data` lines per event (`data`: one Event as JSON), comment lines (`:`) as heartbeats, a `retry` field first.' },
                example: 'retry: 1000\n: events of the log after the start, oldest first\n\nid: evt_0123456789abcdef0123456789abcdef\nevent: credit_limit.updated\ndata: {"id":"evt_0123456789abcdef0123456789abcdef","object":"event","type":"credit_limit.updated",…}\n\n',
              },
            },
          },
          ...errorResponsesByStatus(STREAM_ERRORS),
        },
      },
    },
  };
}

/**
 * The document's top-level `webhooks` (OpenAPI 3.1): one entry per event
 * type, the POST a webhook endpoint receives (Standard Webhooks: the event
 * as JSON, signed in its headers).
 */
export function eventWebhooks(): Record<string, JsonObject> {
  const header = (description: string, schema: JsonObject): JsonObject => ({ in: 'header', required: true, description, schema });
  const parameters = [
    { name: 'webhook-id', ...header("The event's id: the same on every delivery of one event (drop duplicates by it).", { type: 'string', maxLength: 255, pattern: '^evt_[0-9a-f]+$' }) },
    { name: 'webhook-timestamp', ...header('When this attempt was signed, in whole seconds since the Unix epoch (refuse one far from your clock).', { type: 'string', maxLength: 12, pattern: '^[0-9]+$' }) },
    {
      name: 'webhook-signature',
      ...header('`v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">` under the endpoint\'s secret; during a rotation, two signatures separated by a space.', {
        type: 'string',
        maxLength: 256,
        pattern: '^v1,[A-Za-z0-9+/=]+( v1,[A-Za-z0-9+/=]+)*$',
      }),
    },
  ];
  const entries = Object.entries(EVENT_OBJECTS).flatMap(([object, resource]) =>
    (EVENT_TYPES_BY_OBJECT[object] ?? []).map((type): [string, JsonObject] => [
      type,
      {
        post: {
          operationId: `on${type.split(/[._]/).map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')}`,
          tags: ['Events'],
          summary: `\`${type}\` delivered to your endpoint`,
          description: `The event, POSTed to each enabled endpoint whose \`enabled_events\` take \`${type}\`. Answer 2xx within 10 s; anything else is retried with back-off for at least 3 days (docs/webhooks.md).`,
          security: [],
          parameters,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { allOf: [schemaRef(eventSchemaName(resource)), { type: 'object', properties: { type: { const: type } } }] } } },
          },
          responses: {
            '200': { description: 'Received (any 2xx).' },
            '400': { description: 'Refused (any other status, or no answer within 10 s): the delivery is retried.' },
          },
        },
      },
    ]),
  );
  return Object.fromEntries(entries);
}
