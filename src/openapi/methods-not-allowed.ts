import type { ErrorCode } from '../domain/errors.js';
import { MAX_UID_LENGTH } from '../domain/record-uid.js';
import { OPENAPI_METHODS } from './answer-headers.js';
import type { JsonObject } from './json-schema.js';
import { codesByStatus, problemResponseName, problemResponseOfCodes } from './problem-responses.js';

/** The path-item extension that declares, once per path, the answer to every method the path does not serve. */
export const METHODS_NOT_ALLOWED = 'x-methods-not-allowed';

/** `components.responses` name of a CORS preflight's 204 (answers.204 of every path). */
export const CORS_PREFLIGHT = 'CorsPreflight';

/**
 * What a request can be refused with before its method is looked at, on any
 * path: `bad_request` for a URL the router cannot read. A code the service
 * answers that early (whatever the method) belongs here.
 */
const REFUSED_BEFORE_ROUTING: readonly ErrorCode[] = ['bad_request'];

/**
 * Declares on each path, in its `x-methods-not-allowed` extension, what
 * every other method gets (SPEC §2): `405` with `Allow` naming `allow`,
 * before authentication and before any body is read; `answers` holds the
 * Response Objects by status. Not operations: those methods do nothing, and
 * OpenAPI cannot name most of them (PROPFIND, …). A GET path serves HEAD too.
 */
export function declareMethodsNotAllowed(paths: Record<string, JsonObject>): void {
  for (const [path, pathItem] of Object.entries(paths)) {
    const served = OPENAPI_METHODS.filter((method) => pathItem[method] !== undefined);
    const allowed = new Set<string>([...served, ...(served.includes('get') ? ['head'] : [])]);
    // In the order the service lists them (Node's METHODS, alphabetical).
    const allow = [...allowed].map((method) => method.toUpperCase()).sort();
    const hasPathParameter = path.includes('{');
    // On a path with a {uid}, a uid longer than any record's is refused as unknown before the method is looked at.
    const codes: ErrorCode[] = [...REFUSED_BEFORE_ROUTING, ...(hasPathParameter ? (['not_found'] as const) : []), 'method_not_allowed'];
    pathItem[METHODS_NOT_ALLOWED] = {
      description: `Every other method (any the HTTP parser accepts: DELETE, OPTIONS, PROPFIND, …) is answered 405 with \`Allow: ${allow.join(', ')}\`, before authentication and before any body is read; a URL the router cannot read is a 400 first${hasPathParameter ? `, a uid over ${MAX_UID_LENGTH} characters a 404` : ''}. A CORS preflight (\`OPTIONS\` with \`Access-Control-Request-Method\`) from an origin in the operator's CORS_ALLOWED_ORIGINS is a 204.`,
      allow,
      // Not `responses`: linters read every `responses` under a path as an operation's (asking a 401, a 429, …).
      answers: {
        204: { $ref: `#/components/responses/${CORS_PREFLIGHT}` },
        ...Object.fromEntries([...codesByStatus(codes)].map(([status, shared]) => [status, problemResponseOfCodes(shared)])),
      },
    };
  }
}

/**
 * The `Allow` of the shared 405: one of the lists the paths' `x-methods-not-allowed` name
 * (`CONNECT host:port`, which names no path, gets `GET, HEAD` too).
 */
export function declareAllowValues(paths: Record<string, JsonObject>, responses: Record<string, JsonObject>): void {
  const lists = new Set(Object.values(paths).map((pathItem) => (pathItem[METHODS_NOT_ALLOWED] as { allow: string[] }).allow.join(', ')));
  const response = responses[problemResponseName('method_not_allowed')];
  const headers = response?.headers as Record<string, JsonObject> | undefined;
  if (headers?.Allow) headers.Allow = { ...headers.Allow, schema: { type: 'string', enum: [...lists].sort(), examples: ['GET, HEAD'] } };
}
