import { API_VERSION } from '../domain/api-version.js';
import type { JsonObject } from './json-schema.js';

/** The methods an OpenAPI path item can declare. */
const OPENAPI_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const headerRef = (name: string): JsonObject => ({ $ref: `#/components/headers/${name}` });

/** `components.headers` of what every answer, or every authenticated answer, carries. */
export function answerHeaderComponents(): Record<string, JsonObject> {
  const text = (description: string, required = true): JsonObject => ({ description, required, schema: { type: 'string', maxLength: 1024 } });
  const seconds = (description: string): JsonObject => ({ description, required: false, schema: { type: 'integer', minimum: 0 } });
  return {
    'X-Request-Id': text("The request's id: the client's own X-Request-Id when it sent a sane one, else a new UUID."),
    'API-Version': {
      description: 'The API version that answered (docs/api.md "Versioning"): additive changes ship within a version, a breaking change as a new one.',
      required: true,
      schema: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', examples: [API_VERSION] },
    },
    'Cache-Control': text('`no-store` on the API\'s answers: they are one organization\'s data.', false),
    'X-Content-Type-Options': text('`nosniff`.'),
    'X-Frame-Options': text('`DENY`.'),
    'Referrer-Policy': text('`no-referrer`.'),
    'Content-Security-Policy': text("`default-src 'none'; frame-ancestors 'none'` on JSON; the reference page's own policy on HTML."),
    'X-RateLimit-Limit': seconds('Requests the API key may make in the window (on a failed-login 429: the failed authentications an address may make).'),
    'X-RateLimit-Remaining': seconds('Requests left in the window.'),
    'X-RateLimit-Reset': seconds('Seconds until the window resets.'),
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
 * The methods each path does not serve, declared as operations whose one
 * answer is `405` with `Allow` (SPEC §2). A GET path serves HEAD too.
 */
export function declareMethodsNotAllowed(paths: Record<string, JsonObject>): void {
  for (const [path, pathItem] of Object.entries(paths)) {
    const served = OPENAPI_METHODS.filter((method) => pathItem[method] !== undefined);
    const operations = served.map((method) => pathItem[method] as { tags?: string[]; parameters?: JsonObject[] });
    const [tag] = operations.map((operation) => operation.tags?.[0]).filter(Boolean) as string[];
    // The path's own parameters ({uid}), as the served operations declare them.
    const pathParameters = (operations[0]?.parameters ?? []).filter((parameter) => parameter.in === 'path');
    const allowed = new Set<string>([...served, ...(served.includes('get') ? ['head'] : [])]);
    const allow = OPENAPI_METHODS.filter((method) => allowed.has(method)).map((method) => method.toUpperCase()).join(', ');
    for (const method of OPENAPI_METHODS.filter((candidate) => !allowed.has(candidate))) {
      pathItem[method] = {
        operationId: `${method}${pathName(path)}NotAllowed`,
        ...(tag ? { tags: [tag] } : {}),
        summary: `${method.toUpperCase()} is not allowed`,
        description: `${path} serves ${allow}; ${method.toUpperCase()} is answered 405 with an \`Allow\` header naming them, before authentication and before any body is read (a URL the router cannot read is a 400 first${pathParameters.length > 0 ? ', and a path parameter longer than the router reads — over 3,060 characters, longer than any uid — a 404' : ''}).`,
        ...(pathParameters.length > 0 ? { parameters: pathParameters } : {}),
        security: [],
        'x-method-not-allowed': true,
        responses: {
          400: { $ref: '#/components/responses/BadRequest' },
          ...(pathParameters.length > 0 ? { 404: { $ref: '#/components/responses/NotFound' } } : {}),
          405: { $ref: '#/components/responses/MethodNotAllowed' },
        },
      };
    }
  }
}

/** `/api/limits/{uid}/drawdowns/` → `ApiLimitsUidDrawdowns` */
function pathName(path: string): string {
  return path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');
}
