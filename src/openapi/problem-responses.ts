import { MAX_DETAIL_LENGTH } from '../domain/answer-bounds.js';
import { MAX_RETRY_AFTER_SECONDS } from '../domain/header-values.js';
import { WWW_AUTHENTICATE } from '../auth/www-authenticate.js';
import { ERROR_CODES, MAX_LISTED_PARAM_ERRORS, PROBLEM_TYPE_BASE, problemType, type ErrorCode } from '../domain/errors.js';
import { PROBLEM_CONTENT_TYPE } from '../domain/errors.js';
import { MAX_REQUEST_ID_LENGTH, SANE_REQUEST_ID } from '../domain/request-id-format.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';
import { rateLimitHeaderSchemas } from './answer-headers.js';
import { schemaRef, type JsonObject } from './json-schema.js';
import { countSchema } from './resource-schemas.js';

const ALL_CODES = Object.keys(ERROR_CODES) as ErrorCode[];

/**
 * Bounds of every code of the error table and of its title (a test holds the table to them): stated
 * once rather than computed, so that a new code widens no schema of the released document.
 */
export const MAX_ERROR_CODE_LENGTH = 64;
export const MAX_ERROR_TITLE_LENGTH = 100;

/**
 * The most members a write body can name, each one an `errors` entry of an
 * `invalid_body` when none is accepted: the shortest member is `"":0` and a
 * comma, and the body is at most MAX_WRITE_BODY_BYTES (`{` and `}` included).
 */
const MAX_BODY_MEMBERS = Math.floor((MAX_WRITE_BODY_BYTES - 1) / 5);
/** `invalid_parameter` lists at most MAX_LISTED_PARAM_ERRORS; `invalid_body` one per member. */
const MAX_PARAM_ERRORS = Math.max(MAX_LISTED_PARAM_ERRORS, MAX_BODY_MEMBERS);

/** Headers a problem of this code always carries, besides X-Request-Id. */
const PROBLEM_HEADERS: Partial<Record<ErrorCode, Record<string, JsonObject>>> = {
  unauthorized: {
    'WWW-Authenticate': {
      description: 'The Basic challenge.',
      required: true,
      schema: { type: 'string', const: WWW_AUTHENTICATE },
    },
  },
  method_not_allowed: {
    Allow: { description: 'The methods the path accepts.', required: true, schema: { type: 'string', examples: ['GET, HEAD'] } },
  },
  rate_limited: {
    'Retry-After': { $ref: '#/components/headers/Retry-After' },
    'X-RateLimit-Limit': {
      description: "The budget: the API key's requests in the window, or, for an address blocked after failed logins, the failed authentications it may make (AUTH_FAILURES_PER_MINUTE).",
      required: true,
      schema: rateLimitHeaderSchemas().limit,
    },
    'X-RateLimit-Remaining': { description: 'Requests left in the window.', required: true, schema: rateLimitHeaderSchemas().remaining },
    'X-RateLimit-Reset': { description: 'Seconds until the window resets.', required: true, schema: rateLimitHeaderSchemas().reset },
  },
  service_unavailable: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  overloaded: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
  outcome_unknown: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
};

const EXAMPLE_DETAILS: Partial<Record<ErrorCode, JsonObject>> = {
  invalid_parameter: {
    detail: "created_from must be an ISO 8601 timestamp, got 'yesterday'",
    errors: [{ param: 'created_from', detail: "created_from must be an ISO 8601 timestamp, got 'yesterday'" }],
  },
  invalid_body: {
    detail: 'amount must have at most 2 decimal places, got "1.005"',
    errors: [{ param: 'amount', detail: 'amount must have at most 2 decimal places, got "1.005"' }],
  },
  page_out_of_range: {
    detail: 'page 12 is past the last page; the last page is 11 (105 matching records)',
    last_page: 11,
    count: 105,
  },
};

/** The headers a problem of any of `codes` carries besides X-Request-Id (Retry-After on a 503, …). */
export function problemHeadersOf(codes: readonly ErrorCode[]): Record<string, JsonObject> {
  const headers = Object.assign({}, ...codes.map((code) => PROBLEM_HEADERS[code])) as Record<string, JsonObject>;
  // A header some of the codes sharing a status do not send (a 503 webhook_secret_key_missing has no
  // Retry-After: waiting does not fix it) is declared, but not required.
  for (const [name, header] of Object.entries(headers)) {
    if (codes.every((code) => PROBLEM_HEADERS[code]?.[name] !== undefined)) continue;
    const sentWith = `Sent with ${codes.filter((code) => PROBLEM_HEADERS[code]?.[name] !== undefined).map((code) => `\`${code}\``).join(', ')}.`;
    headers[name] =
      name === 'Retry-After'
        ? { description: `Seconds to wait before retrying, at most ${MAX_RETRY_AFTER_SECONDS}. ${sentWith}`, required: false, schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_RETRY_AFTER_SECONDS } }
        : { ...header, description: `${String(header.description ?? '')} ${sentWith}`.trim(), required: false };
  }
  return headers;
}

/** `invalid_parameter` → `InvalidParameter`: the name of the code's response in `components.responses`. */
export function problemResponseName(code: ErrorCode): string {
  return code
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');
}

export function problemResponseRef(code: ErrorCode): JsonObject {
  return { $ref: `#/components/responses/${problemResponseName(code)}` };
}

/** `Problem` and `ParamError`: RFC 9457 problem details as this API writes them. */
export function problemSchemas(): Record<string, JsonObject> {
  return {
    ParamError: {
      title: 'ParamError',
      description: 'One invalid input.',
      type: 'object',
      required: ['param', 'detail'],
      properties: {
        param: {
          type: 'string',
          // A query parameter's name is cut to 100 characters and `…`; a body member's is as sent, within the body's bytes.
          maxLength: MAX_WRITE_BODY_BYTES,
          description: 'The query parameter, or the request body member, at fault.',
          examples: ['created_from'],
        },
        detail: { type: 'string', maxLength: MAX_DETAIL_LENGTH, description: `What is wrong with it (cut to ${MAX_DETAIL_LENGTH} characters, ending in \`…\`, when it quotes a long input).` },
      },
      additionalProperties: false,
    },
    Problem: {
      title: 'Problem',
      description: 'An RFC 9457 problem document (`application/problem+json`). Extension members may be added.',
      type: 'object',
      required: ['type', 'title', 'status', 'detail', 'code', 'request_id'],
      properties: {
        type: {
          type: 'string',
          format: 'uri',
          maxLength: PROBLEM_TYPE_BASE.length + MAX_ERROR_CODE_LENGTH,
          pattern: `^${PROBLEM_TYPE_BASE.replaceAll('.', '\\.')}[a-z-]+$`,
          description: 'Identifies the kind of problem.',
          examples: [problemType('invalid_parameter')],
        },
        title: { type: 'string', maxLength: MAX_ERROR_TITLE_LENGTH, description: 'Short summary of the kind of problem.' },
        status: { type: 'integer', format: 'int32', minimum: 400, maximum: 599, description: 'The HTTP status code: every problem is a 4xx or a 5xx.' },
        detail: {
          type: 'string',
          maxLength: MAX_DETAIL_LENGTH,
          description: `What went wrong with this request, for a human (cut to ${MAX_DETAIL_LENGTH} characters, ending in \`…\`, when it quotes a long input).`,
        },
        code: { type: 'string', enum: ALL_CODES, description: 'Stable machine-readable error code.' },
        errors: {
          type: 'array',
          maxItems: MAX_PARAM_ERRORS,
          items: schemaRef('ParamError'),
          description: 'Every invalid query parameter (`invalid_parameter`) or body member (`invalid_body`).',
        },
        request_id: {
          type: 'string',
          maxLength: MAX_REQUEST_ID_LENGTH,
          pattern: SANE_REQUEST_ID.source,
          description: 'The X-Request-Id of the request; quote it when reporting a problem.',
        },
        last_page: { ...countSchema(1), description: 'The last page there is (`page_out_of_range` only).' },
        count: { ...countSchema(0), description: 'Number of matching records (`page_out_of_range` only).' },
      },
      additionalProperties: true,
    },
  };
}

/** One response per error code of the table, so a new code is documented as soon as it exists. */
export function problemResponses(): Record<string, JsonObject> {
  return Object.fromEntries(ALL_CODES.map((code) => [problemResponseName(code), problemResponse(code)]));
}

function problemResponse(code: ErrorCode): JsonObject {
  const { status, title } = ERROR_CODES[code];
  return {
    description: `${title} (\`${code}\`)`,
    headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, ...PROBLEM_HEADERS[code] },
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: problemSchemaOf(code),
        example: {
          type: problemType(code),
          title,
          status,
          detail: `${title}.`,
          code,
          ...EXAMPLE_DETAILS[code],
          request_id: '5f0c6b2e-7c1a-4e5b-9a55-2b1f7d3c9e10',
        },
      },
    },
  };
}

/** The codes grouped by their HTTP status (as the document's response keys), in the order given. */
export function codesByStatus(codes: readonly ErrorCode[]): Map<string, ErrorCode[]> {
  const byStatus = new Map<string, ErrorCode[]>();
  for (const code of codes) {
    const status = String(ERROR_CODES[code].status);
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return byStatus;
}

/**
 * The response of an operation that answers one status with several codes
 * (a nested list's 404: `not_found` for its parent, or `page_out_of_range`):
 * the body is one of their problems.
 */
export function problemResponseOfCodes(codes: readonly ErrorCode[]): JsonObject {
  const [first] = codes;
  if (first === undefined) throw new Error('a problem response needs at least one code');
  if (codes.length === 1) return problemResponseRef(first);
  const headers = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, ...problemHeadersOf(codes) };
  return {
    description: codes.map((code) => `${ERROR_CODES[code].title} (\`${code}\`)`).join(', or '),
    headers,
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { oneOf: codes.map(problemSchemaOf) } } },
  };
}

function problemSchemaOf(code: ErrorCode): JsonObject {
  const { status, title } = ERROR_CODES[code];
  const requiresErrors = code === 'invalid_parameter' || code === 'invalid_body';
  return {
    allOf: [
      schemaRef('Problem'),
      {
        type: 'object',
        ...(requiresErrors ? { required: ['errors'] } : {}),
        properties: {
          status: { const: status },
          code: { const: code },
          type: { const: problemType(code) },
          title: { const: title },
          ...(requiresErrors ? { errors: { type: 'array', minItems: 1, maxItems: code === 'invalid_parameter' ? MAX_LISTED_PARAM_ERRORS : MAX_BODY_MEMBERS, items: schemaRef('ParamError') } } : {}),
        },
      },
    ],
  };
}
