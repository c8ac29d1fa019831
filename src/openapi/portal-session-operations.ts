import type { ErrorCode } from '../domain/errors.js';
import { MAX_PUBLIC_URL_LENGTH } from '../domain/answer-bounds.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { TIMESTAMP_PATTERN } from './resource-schemas.js';
import { errorResponsesByStatus } from './write-operations.js';
import { REQUIRED_SCOPE_EXTENSION } from './webhook-endpoint-operations.js';

/** The tag of the portal's way in (docs/portal.md "Access: sessions and links"). */
export const PORTAL_TAG = 'Portal';

/** The security scheme of a portal session (`Authorization: Bearer lps_…`). */
export const PORTAL_SESSION_SCHEME = 'portalSession';

const BODY: readonly ErrorCode[] = ['invalid_json', 'payload_too_large', 'unsupported_media_type', 'invalid_body'];
const SERVER: readonly ErrorCode[] = ['internal_error', 'service_unavailable', 'overloaded'];
const TIMESTAMP = { type: 'string', format: 'date-time', maxLength: 27, pattern: TIMESTAMP_PATTERN } as const;
const HEADERS = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
const TOKEN = { type: 'string', pattern: '^lpt_[A-Za-z0-9_-]{43}$', minLength: 47, maxLength: 47 } as const;

function created(description: string, schema: string): Record<string, JsonObject> {
  return { 201: { description, headers: HEADERS, content: { 'application/json': { schema: schemaRef(schema) } } } };
}

/** The paths of src/portal/portal-session-routes.ts. */
export function portalSessionPaths(): Record<string, JsonObject> {
  return {
    '/api/portal_sessions/': {
      post: {
        operationId: 'createPortalSession',
        tags: [PORTAL_TAG],
        summary: 'Make a portal link',
        description:
          'A one-time link into your organization’s portal (`/portal/`), valid 10 minutes: whoever opens it gets a session of at most 1 hour with this key’s organization and scope, which ends when the key is revoked. Any key may make one; a portal session may not (403). The token is in the link’s fragment, so it is never sent in a request line or logged. Counted on the key’s request budget.',
        [REQUIRED_SCOPE_EXTENSION]: 'read',
        security: [{ basicAuth: [] }],
        requestBody: {
          required: false,
          description: `No member: send \`{}\` or no body (a JSON object of at most ${MAX_WRITE_BODY_BYTES} bytes).`,
          content: { 'application/json': { schema: { type: 'object', maxProperties: 0, additionalProperties: false }, example: {} } },
        },
        responses: {
          ...created('The link.', 'PortalSession'),
          ...errorResponsesByStatus(['bad_request', 'unauthorized', 'insufficient_scope', 'rate_limited', ...BODY, ...SERVER]),
        },
      },
    },
    '/api/portal_sessions/current/': {
      delete: {
        operationId: 'endPortalSession',
        tags: [PORTAL_TAG],
        summary: 'End this portal session (sign out)',
        description:
          'Ends the portal session that sends it, now: what the portal’s **Sign out** does. The same `Authorization: Bearer lps_…` is refused (401) from then on by the node that answered, and by every other node within `AUTH_CACHE_TTL_MS` (5 s by default: how long a node reuses a successful check). Other sessions of the same key are untouched; the key is not revoked. Sent with HTTP Basic (a key, not a session) it is a 400 saying so. Sent again, the session has ended: 401.',
        [REQUIRED_SCOPE_EXTENSION]: 'read',
        security: [{ [PORTAL_SESSION_SCHEME]: [] }],
        responses: {
          204: { description: 'The session has ended.', headers: HEADERS },
          ...errorResponsesByStatus(['bad_request', 'unauthorized', 'rate_limited', ...SERVER]),
        },
      },
    },
    '/api/portal_sessions/exchange/': {
      post: {
        operationId: 'exchangePortalSession',
        tags: [PORTAL_TAG],
        summary: 'Exchange a portal link for a session',
        description:
          'What the portal does with the token of the link it was opened with: once. The answer’s `session` is sent as `Authorization: Bearer <session>` to every other route, with the organization and scope of the key that made the link, until `expires_at` (at most 1 hour, never past the key’s expiry) or until that key is revoked. No credentials: the token is one. A link already used, expired, or not valid (unknown, or its key revoked) is a 401 saying which; each counts as a failed authentication of the client’s address.',
        security: [],
        requestBody: {
          required: true,
          description: `A JSON object of at most ${MAX_WRITE_BODY_BYTES} bytes.`,
          content: { 'application/json': { schema: schemaRef('PortalSessionExchangeInput'), example: { token: `lpt_${'Q'.repeat(43)}` } } },
        },
        responses: {
          ...created('The session.', 'PortalSessionGrant'),
          ...errorResponsesByStatus(['bad_request', 'unauthorized', 'rate_limited', ...BODY, ...SERVER]),
        },
      },
    },
  };
}

/** The schemas the operations refer to. */
export function portalSessionSchemas(): Record<string, JsonObject> {
  return {
    PortalSession: {
      title: 'PortalSession',
      description: 'A one-time link into the portal.',
      type: 'object',
      required: ['object', 'url', 'expires_at'],
      properties: {
        object: { const: 'portal_session' },
        url: {
          type: 'string',
          format: 'uri',
          maxLength: MAX_PUBLIC_URL_LENGTH + 80,
          pattern: '^https?://[^#]+/portal/#token=lpt_[A-Za-z0-9_-]{43}$',
          description: 'Open it in a browser, once. The same fragment on a page’s path opens that page (`/portal/webhooks/#token=…`).',
          examples: [`https://lending.example.com/portal/#token=lpt_${'Q'.repeat(43)}`],
        },
        expires_at: { ...TIMESTAMP, description: 'Until when the link may be exchanged (10 minutes).' },
      },
      additionalProperties: false,
    },
    PortalSessionExchangeInput: {
      title: 'PortalSessionExchangeInput',
      type: 'object',
      required: ['token'],
      properties: { token: { ...TOKEN, description: 'The text after `#token=` in the link.' } },
      additionalProperties: false,
    },
    PortalSessionGrant: {
      title: 'PortalSessionGrant',
      description: 'A portal session: its bearer secret, shown this once.',
      type: 'object',
      required: ['object', 'session', 'expires_at', 'organization_id', 'scopes'],
      properties: {
        object: { const: 'portal_session_grant' },
        session: { type: 'string', pattern: '^lps_[A-Za-z0-9_-]{43}$', minLength: 47, maxLength: 47, description: 'Send as `Authorization: Bearer <session>`.' },
        expires_at: { ...TIMESTAMP, description: 'When the session ends (at most 1 hour after the exchange).' },
        organization_id: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,64}$', maxLength: 64, description: 'The organization the session acts for.' },
        scopes: {
          type: 'array',
          minItems: 1,
          maxItems: 2,
          uniqueItems: true,
          items: { enum: ['read', 'write', 'webhooks'] },
          description: 'What the session may do: `read`, and the key’s `write` or `webhooks` scope if it has one.',
          examples: [['read', 'write']],
        },
      },
      additionalProperties: false,
    },
  };
}

/** The security scheme of a portal session, beside basicAuth. */
export function portalSessionScheme(): JsonObject {
  return {
    type: 'http',
    scheme: 'bearer',
    description:
      'A portal session (`lps_…`) from `POST /api/portal_sessions/exchange/`: the organization and scope of the key that made the link, for at most 1 hour. What the portal in the browser sends; integrations use HTTP Basic.',
  };
}
