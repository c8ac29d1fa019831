import { API_VERSION } from '../domain/api-version.js';
import { DOCS_CSP } from '../http/api-reference-routes.js';
import { MAX_REQUEST_ID_LENGTH, SANE_REQUEST_ID } from '../http/request-id.js';
import { JSON_CSP, SECURITY_HEADERS } from '../http/security-headers.js';
import { WINDOW_MS } from '../rate-limits/request-limiter.js';
import type { JsonObject } from './json-schema.js';

/** The methods an OpenAPI path item can declare. */
const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

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

/** `components.headers` of what every answer, or every authenticated answer, carries. */
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
    'X-RateLimit-Limit': count('Requests the API key may make in the window (on a failed-login 429: the failed authentications an address may make).', rateLimit.limit),
    'X-RateLimit-Remaining': count('Requests left in the window.', rateLimit.remaining),
    'X-RateLimit-Reset': count('Seconds until the window resets.', rateLimit.reset),
  };
}

const EVERY_ANSWER = ['X-Request-Id', 'API-Version', 'Cache-Control', 'X-Content-Type-Options', 'X-Frame-Options', 'Referrer-Policy', 'Content-Security-Policy'];
/** Sent on every answer once the API key is known (when rate limits are on, as they are by default). */
const AUTHENTICATED_ANSWER = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

/** `headers` of one response: its own, after those every answer carries and before the rate-limit ones. */
function withAnswerHeaders(own: Record<string, JsonObject> | undefined, authenticated: boolean): Record<string, JsonObject> {
  const names = [...EVERY_ANSWER, ...(authenticated ? AUTHENTICATED_ANSWER : [])];
  const [first, second, ...rest] = names.map((name) => [name, headerRef(name)] as const);
  return { ...Object.fromEntries([first!, second!]), ...own, ...Object.fromEntries(rest.filter(([name]) => !own?.[name])) };
}

/**
 * Declares on every response of `paths` and on every shared response the
 * headers the service adds to all answers (request id, version, security
 * headers) and, on the operations that take an API key and on the problems
 * (shared by them), the rate-limit headers.
 */
export function declareAnswerHeaders(paths: Record<string, JsonObject>, responses: Record<string, JsonObject>): void {
  for (const pathItem of Object.values(paths)) {
    for (const method of OPENAPI_METHODS) {
      const operation = pathItem[method] as { security?: unknown[]; responses: Record<string, JsonObject> } | undefined;
      if (!operation) continue;
      const authenticated = operation.security === undefined || operation.security.length > 0;
      for (const response of Object.values(operation.responses)) {
        if (!('$ref' in response)) response.headers = withAnswerHeaders(response.headers as Record<string, JsonObject> | undefined, authenticated);
      }
    }
  }
  for (const response of Object.values(responses)) response.headers = withAnswerHeaders(response.headers as Record<string, JsonObject> | undefined, true);
}

/**
 * The `Allow` of the shared 405: one of the lists the paths' `x-methods-not-allowed` name
 * (`CONNECT host:port`, which names no path, gets `GET, HEAD` too).
 */
export function declareAllowValues(paths: Record<string, JsonObject>, responses: Record<string, JsonObject>): void {
  const lists = new Set(Object.values(paths).map((pathItem) => ((pathItem[METHODS_NOT_ALLOWED] as { allow: string[] }).allow).join(', ')));
  const headers = responses.MethodNotAllowed?.headers as Record<string, JsonObject> | undefined;
  if (headers?.Allow) headers.Allow = { ...headers.Allow, schema: { type: 'string', enum: [...lists].sort(), examples: ['GET, HEAD'] } };
}

/** The path-item extension that declares, once per path, the answer to every method the path does not serve. */
export const METHODS_NOT_ALLOWED = 'x-methods-not-allowed';

/**
 * Declares on each path, in its `x-methods-not-allowed` extension, what
 * every other method gets (SPEC §2): `405` with `Allow` naming `allow`
 * (`answers` holds the Response Objects by status),
 * before authentication and before any body is read. Not operations: those
 * methods do nothing, and OpenAPI cannot name most of them (PROPFIND, …).
 * A URL the router cannot read is a 400 first; on a path with a `{uid}`, a
 * uid over 255 characters is a 404 first. A GET path serves HEAD too.
 */
export function declareMethodsNotAllowed(paths: Record<string, JsonObject>): void {
  for (const [path, pathItem] of Object.entries(paths)) {
    const served = OPENAPI_METHODS.filter((method) => pathItem[method] !== undefined);
    const allowed = new Set<string>([...served, ...(served.includes('get') ? ['head'] : [])]);
    // In the order the service lists them (Node's METHODS, alphabetical).
    const allow = [...allowed].map((method) => method.toUpperCase()).sort();
    const hasPathParameter = path.includes('{');
    pathItem[METHODS_NOT_ALLOWED] = {
      description: `Every other method (any the HTTP parser accepts: DELETE, OPTIONS, PROPFIND, …) is answered 405 with \`Allow: ${allow.join(', ')}\`, before authentication and before any body is read${hasPathParameter ? '; a URL the router cannot read is a 400 first, a uid over 255 characters a 404' : '; a URL the router cannot read is a 400 first'}.`,
      allow,
      // Not `responses`: linters read every `responses` under a path as an operation's (asking a 401, a 429, …).
      answers: {
        400: { $ref: '#/components/responses/BadRequest' },
        // A uid longer than any record's is refused as unknown before the method is looked at.
        ...(hasPathParameter ? { 404: { $ref: '#/components/responses/NotFound' } } : {}),
        405: { $ref: '#/components/responses/MethodNotAllowed' },
      },
    };
  }
}
