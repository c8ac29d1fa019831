import { API_VERSION } from '../domain/api-version.js';
import { MAX_REQUEST_ID_LENGTH, SANE_REQUEST_ID } from '../domain/request-id-format.js';
import { DOCS_CSP, JSON_CSP, SECURITY_HEADERS } from '../domain/header-values.js';
import { CORS_ALLOWED_REQUEST_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS, MAX_ORIGIN_LENGTH } from '../domain/cors-origins-setting.js';
import { WINDOW_MS } from '../rate-limits/request-limiter.js';
import type { JsonObject } from './json-schema.js';

/** The methods an OpenAPI path item can declare. */
export const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const headerRef = (name: string): JsonObject => ({ $ref: `#/components/headers/${name}` });

/**
 * The most RATE_LIMIT_PER_MINUTE, WRITE_RATE_LIMIT_PER_MINUTE and
 * AUTH_FAILURES_PER_MINUTE may be (src/config.ts refuses more): the largest
 * X-RateLimit-Limit and -Remaining.
 */
export const MAX_REQUESTS_PER_MINUTE = 1_000_000;

/** X-RateLimit-Limit, -Remaining and -Reset: whole numbers within the window's bounds. */
export function rateLimitHeaderSchemas(): Record<'limit' | 'remaining' | 'reset', JsonObject> {
  const upTo = (maximum: number): JsonObject => ({ type: 'integer', format: 'int32', minimum: 0, maximum });
  return { limit: upTo(MAX_REQUESTS_PER_MINUTE), remaining: upTo(MAX_REQUESTS_PER_MINUTE), reset: upTo(WINDOW_MS / 1000) };
}

/** `components.headers` of what every answer, or every rate-limited answer, carries. */
export function answerHeaderComponents(): Record<string, JsonObject> {
  const exactly = (description: string, values: readonly string[], required = true): JsonObject => ({
    description,
    required,
    schema: values.length === 1 ? { type: 'string', const: values[0] } : { type: 'string', enum: values },
  });
  const rateLimit = rateLimitHeaderSchemas();
  const count = (description: string, schema: JsonObject): JsonObject => ({ description, required: false, schema });
  return {
    'X-Request-Id': {
      description: "The request's id: the client's own X-Request-Id when it sent a sane one, else a new UUID.",
      required: true,
      schema: { type: 'string', maxLength: MAX_REQUEST_ID_LENGTH, pattern: SANE_REQUEST_ID.source },
    },
    'API-Version': {
      description: 'The API version that answered (docs/api.md "Versioning"): additive changes ship within a version, a breaking change as a new one.',
      required: true,
      schema: { type: 'string', maxLength: 10, pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', examples: [API_VERSION] },
    },
    'Cache-Control': exactly("`no-store` on the API's answers: they are one organization's data.", ['no-store'], false),
    'X-Content-Type-Options': exactly('`nosniff`.', [SECURITY_HEADERS['x-content-type-options']!]),
    'X-Frame-Options': exactly('`DENY`.', [SECURITY_HEADERS['x-frame-options']!]),
    'Referrer-Policy': exactly('`no-referrer`.', [SECURITY_HEADERS['referrer-policy']!]),
    'Content-Security-Policy': exactly("`default-src 'none'; frame-ancestors 'none'` on JSON; the reference page's own policy on HTML.", [JSON_CSP, DOCS_CSP]),
    'X-RateLimit-Limit': count(
      'Requests the API key may make in the window (on a failed-login 429: the failed authentications an address may make; on the probes and the reference, which take no key: the requests an address may make to them).',
      rateLimit.limit,
    ),
    'X-RateLimit-Remaining': count('Requests left in the window.', rateLimit.remaining),
    'X-RateLimit-Reset': count('Seconds until the window resets.', rateLimit.reset),
    ...corsHeaderComponents(),
  };
}

const ONLY_FOR_AN_ALLOWED_ORIGIN = 'Sent only when the request\'s `Origin` is one of the operator\'s CORS_ALLOWED_ORIGINS (none by default: then no CORS header is sent, and pages of other origins cannot read the answer).';

/** The CORS headers (src/http/cors.ts): on every answer to an allowed origin, and on its preflight. */
function corsHeaderComponents(): Record<string, JsonObject> {
  const optional = (description: string, schema: JsonObject): JsonObject => ({ description, required: false, schema });
  return {
    'Access-Control-Allow-Origin': optional(`The request's own \`Origin\`, which may read this answer. ${ONLY_FOR_AN_ALLOWED_ORIGIN}`, {
      type: 'string',
      maxLength: MAX_ORIGIN_LENGTH,
      pattern: '^https?://[^/]+$',
      examples: ['https://app.example.com'],
    }),
    'Access-Control-Expose-Headers': optional(`The answer headers a page of that origin may read. ${ONLY_FOR_AN_ALLOWED_ORIGIN}`, { type: 'string', const: CORS_EXPOSED_HEADERS }),
    Vary: optional('`Origin`: sent on every answer once the operator allows any origin (CORS_ALLOWED_ORIGINS), so a shared cache keeps one origin\'s answer from another.', {
      type: 'string',
      const: 'Origin',
    }),
  };
}

/** `components.responses.CorsPreflight`: what a preflight from an allowed origin gets. */
export function corsPreflightResponse(): JsonObject {
  const required = (description: string, schema: JsonObject): JsonObject => ({ description, required: true, schema });
  return {
    description: `A CORS preflight (\`OPTIONS\` with \`Access-Control-Request-Method\`) from an origin in the operator's CORS_ALLOWED_ORIGINS: the methods, request headers and cache time it may use. From any other origin, or without CORS_ALLOWED_ORIGINS, an OPTIONS is a 405 like every method the path does not serve.`,
    headers: {
      'Access-Control-Allow-Methods': required('The methods the path serves (its `Allow`).', { type: 'string', maxLength: 64, pattern: '^[A-Z]+(, [A-Z]+)*$', examples: ['GET, HEAD, POST'] }),
      'Access-Control-Allow-Headers': required('The request headers a page may send.', { type: 'string', const: CORS_ALLOWED_REQUEST_HEADERS }),
      'Access-Control-Max-Age': required('Seconds the browser may reuse this answer.', { type: 'integer', format: 'int32', minimum: CORS_MAX_AGE_SECONDS, maximum: CORS_MAX_AGE_SECONDS }),
    },
  };
}

const EVERY_ANSWER = [
  'X-Request-Id',
  'API-Version',
  'Cache-Control',
  'X-Content-Type-Options',
  'X-Frame-Options',
  'Referrer-Policy',
  'Content-Security-Policy',
  'Access-Control-Allow-Origin',
  'Access-Control-Expose-Headers',
  'Vary',
];
/**
 * Sent on every answer once the API key is known, and on every answer of the routes that take no key
 * (their budget is per address), when rate limits are on, as they are by default.
 */
const RATE_LIMITED_ANSWER = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

/** `headers` of one response: its own, after those every answer carries and before the rate-limit ones. */
function withAnswerHeaders(own: Record<string, JsonObject> | undefined): Record<string, JsonObject> {
  const names = [...EVERY_ANSWER, ...RATE_LIMITED_ANSWER];
  const [first, second, ...rest] = names.map((name) => [name, headerRef(name)] as const);
  return { ...Object.fromEntries([first!, second!]), ...own, ...Object.fromEntries(rest.filter(([name]) => !own?.[name])) };
}

/**
 * Declares on every response of `paths` and on every shared response the
 * headers the service adds to all answers (request id, version, security
 * headers, CORS) and the rate-limit headers (every operation is rate-limited:
 * per API key, or per client address on those that take no key).
 */
export function declareAnswerHeaders(paths: Record<string, JsonObject>, responses: Record<string, JsonObject>): void {
  for (const pathItem of Object.values(paths)) {
    for (const method of OPENAPI_METHODS) {
      const operation = pathItem[method] as { responses: Record<string, JsonObject> } | undefined;
      if (!operation) continue;
      for (const response of Object.values(operation.responses)) {
        if (!('$ref' in response)) response.headers = withAnswerHeaders(response.headers as Record<string, JsonObject> | undefined);
      }
    }
  }
  for (const response of Object.values(responses)) response.headers = withAnswerHeaders(response.headers as Record<string, JsonObject> | undefined);
}
