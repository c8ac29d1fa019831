import type { JsonObject } from '../src/openapi/json-schema.js';
import { EVENT_TYPES } from '../src/events/event-types.js';

/**
 * The SDK's events and webhook-endpoint types as SPEC §3c and
 * docs/webhooks.md state the contract, for the generator to use while the
 * OpenAPI document does not describe them yet. Each is a fallback by name:
 * a schema of the same name in the document (or the list parameters of its
 * list operation) replaces it, so once the document has `Event`,
 * `WebhookEndpoint`, … `npm run openapi` types the SDK from the document.
 */


const timestamp = (description: string): JsonObject => ({ type: 'string', format: 'date-time', description });
const nullableText = (description: string): JsonObject => ({ type: ['string', 'null'], description });
const orderBy = (fields: string[]): JsonObject => ({
  enum: fields.flatMap((field) => [field, `-${field}`]),
  description: `Sort field; prefix \`-\` for descending. Default \`-${fields[0]}\`.`,
});
const paging: Record<string, JsonObject> = {
  page: { type: 'integer', minimum: 1, description: 'Page number, from 1.' },
  cursor: { type: 'string', description: 'Opaque keyset position from a `next`/`previous` link; empty for the first record.' },
};
const createdBounds: Record<string, JsonObject> = {
  created_from: { type: 'string', description: 'Created on or after this time (RFC 3339 timestamp or a date; inclusive).' },
  created_to: { type: 'string', description: 'Created on or before this time (RFC 3339 timestamp or a date; inclusive).' },
};

const endpointProperties: Record<string, JsonObject> = {
  id: { type: 'string', description: 'The endpoint\'s id, `we_…`.' },
  object: { const: 'webhook_endpoint' },
  url: { type: 'string', description: 'Where events are POSTed: `https://` (plain `http://` only where the operator allows private addresses).' },
  description: nullableText('Free text for people.'),
  enabled_events: { type: 'array', items: { type: 'string' }, description: 'Event types, prefixes such as `credit_limit.*`, or `*`.' },
  disabled: { type: 'boolean', description: 'Whether deliveries are stopped.' },
  disabled_reason: { enum: ['failing', 'requested', null], description: '`failing`: every attempt failed for 3 days; `requested`: disabled through the API.' },
  created_at: timestamp('When the endpoint was created.'),
  updated_at: timestamp('When the endpoint last changed.'),
};
const endpointRequired = Object.keys(endpointProperties);

export const CONTRACT_SCHEMAS: Record<string, JsonObject> = {
  Event: {
    title: 'Event',
    description: 'A change to a record of the organization, as the log and webhooks carry it.',
    type: 'object',
    required: ['id', 'object', 'type', 'created_at', 'api_version', 'data', 'request_id', 'idempotency_key', 'import_id'],
    properties: {
      id: { type: 'string', description: 'The event\'s id, `evt_…`: also the `webhook-id` of its deliveries.' },
      object: { const: 'event' },
      type: { enum: EVENT_TYPES, description: 'What happened.' },
      created_at: timestamp('When the event entered the log (a moment after its change committed).'),
      api_version: { type: 'string', description: 'The API version that rendered `data`.' },
      data: {
        type: 'object',
        required: ['object'],
        properties: {
          object: { type: 'object', additionalProperties: {}, description: 'The record exactly as GET on it renders it right after the change.' },
          previous_attributes: { type: 'object', additionalProperties: {}, description: 'On `*.updated` and `loan.repaid`: the fields that changed, with their earlier values.' },
        },
        additionalProperties: false,
      },
      request_id: nullableText('The `X-Request-Id` of the request that caused it; null for an import.'),
      idempotency_key: nullableText('The `Idempotency-Key` of that request, if any.'),
      import_id: nullableText('The import that caused it; null for a request.'),
    },
    additionalProperties: false,
  },
  EventListParams: {
    title: 'EventListParams',
    description: 'Query parameters of `listEvents`; all optional.',
    type: 'object',
    properties: {
      type: { type: 'string', description: 'An event type, or a prefix such as `credit_limit.*`.' },
      object: { type: 'string', description: 'The uid of the record the events are about.' },
      ...createdBounds,
      order_by: orderBy(['created_at']),
      ...paging,
    },
    additionalProperties: false,
  },
  EventResendInput: {
    title: 'EventResendInput',
    type: 'object',
    properties: { endpoint: { type: 'string', description: 'One endpoint (`we_…`) to send it to; default: every enabled endpoint that takes its type.' } },
    additionalProperties: false,
  },
  EventResendResult: {
    title: 'EventResendResult',
    description: 'The answer to a resend (202): the endpoints the event was queued for.',
    type: 'object',
    required: ['object', 'event', 'endpoints'],
    properties: {
      object: { const: 'event_resend' },
      event: { type: 'string', description: 'The event, `evt_…`.' },
      endpoints: { type: 'array', items: { type: 'string' }, description: 'The endpoints (`we_…`) it was queued for.' },
    },
    additionalProperties: false,
  },
  WebhookEndpoint: {
    title: 'WebhookEndpoint',
    description: 'Where the organization\'s events are delivered. Its secret is never listed.',
    type: 'object',
    required: endpointRequired,
    properties: endpointProperties,
    additionalProperties: false,
  },
  WebhookEndpointWithSecret: {
    title: 'WebhookEndpointWithSecret',
    description: 'The answer of create and rotate_secret: the endpoint and its signing secret, shown this once.',
    type: 'object',
    required: [...endpointRequired, 'secret'],
    properties: { ...endpointProperties, secret: { type: 'string', description: 'The signing secret, `whsec_…`.' } },
    additionalProperties: false,
  },
  WebhookEndpointInput: {
    title: 'WebhookEndpointInput',
    type: 'object',
    required: ['url', 'enabled_events'],
    properties: { url: endpointProperties.url!, enabled_events: endpointProperties.enabled_events!, description: { type: 'string' } },
    additionalProperties: false,
  },
  WebhookEndpointUpdate: {
    title: 'WebhookEndpointUpdate',
    type: 'object',
    properties: {
      url: endpointProperties.url!,
      enabled_events: endpointProperties.enabled_events!,
      description: endpointProperties.description!,
      disabled: { type: 'boolean', description: '`true` stops deliveries (`disabled_reason: requested`); `false` resumes them.' },
    },
    additionalProperties: false,
  },
  WebhookEndpointListParams: {
    title: 'WebhookEndpointListParams',
    description: 'Query parameters of `listWebhookEndpoints`: numbered pages only.',
    type: 'object',
    properties: { page: paging.page! },
    additionalProperties: false,
  },
  WebhookDeliveryAttempt: {
    title: 'WebhookDeliveryAttempt',
    description: 'One attempt to deliver an event to an endpoint.',
    type: 'object',
    required: ['id', 'object', 'event', 'attempt', 'status_code', 'duration_ms', 'error', 'response_body', 'next_attempt_at', 'created_at'],
    properties: {
      id: { type: 'string', description: 'The attempt\'s id, `wha_…`.' },
      object: { const: 'webhook_delivery_attempt' },
      event: { type: 'string', description: 'The event delivered, `evt_…`.' },
      attempt: { type: 'integer', minimum: 1, description: 'Its number for this event and endpoint, from 1.' },
      status_code: { type: ['integer', 'null'], description: 'The receiver\'s HTTP status; null when none came.' },
      duration_ms: { type: 'integer', minimum: 0 },
      error: nullableText('Why it failed (timeout, refused, redirect, a status other than 2xx …); null on success.'),
      response_body: nullableText('The first 1 KiB of the receiver\'s answer.'),
      next_attempt_at: { type: ['string', 'null'], format: 'date-time', description: 'When the next attempt is due; null when none follows.' },
      created_at: timestamp('When the attempt was made.'),
    },
    additionalProperties: false,
  },
  WebhookDeliveryAttemptListParams: {
    title: 'WebhookDeliveryAttemptListParams',
    description: 'Query parameters of the deliveries list: numbered pages only.',
    type: 'object',
    properties: { page: paging.page! },
    additionalProperties: false,
  },
};
