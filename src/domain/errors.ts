/**
 * The one table of API errors: every problem the service can answer with.
 * A new code without a status, title or docs anchor does not compile.
 */
export const ERROR_CODES = {
  invalid_parameter: { status: 422, title: 'Invalid query parameter' },
  invalid_body: { status: 422, title: 'Invalid request body' },
  invalid_json: { status: 400, title: 'Malformed JSON body' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  idempotency_key_missing: { status: 400, title: 'Idempotency-Key required' },
  idempotency_key_invalid: { status: 400, title: 'Invalid Idempotency-Key' },
  idempotency_key_reused: { status: 422, title: 'Idempotency-Key reused for another request' },
  insufficient_balance: { status: 409, title: 'Insufficient balance' },
  repayment_exceeds_outstanding: { status: 409, title: 'Repayment exceeds outstanding' },
  webhook_endpoint_limit: { status: 409, title: 'Webhook endpoint limit reached' },
  unauthorized: { status: 401, title: 'Authentication required' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  not_found: { status: 404, title: 'Not found' },
  page_out_of_range: { status: 404, title: 'Page out of range' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  not_acceptable: { status: 406, title: 'Not acceptable' },
  request_timeout: { status: 408, title: 'Request timeout' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  expectation_failed: { status: 417, title: 'Expectation failed' },
  bad_request: { status: 400, title: 'Bad request' },
  rate_limited: { status: 429, title: 'Too many requests' },
  internal_error: { status: 500, title: 'Internal server error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  overloaded: { status: 503, title: 'Overloaded' },
  webhook_secret_key_missing: { status: 503, title: 'Webhook secret key not configured' },
  outcome_unknown: { status: 504, title: 'Outcome unknown' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const PROBLEM_TYPE_BASE = 'https://lending-api.dev/problems/';

/** The media type of every error response (RFC 9457). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function problemType(code: ErrorCode): string {
  return PROBLEM_TYPE_BASE + code.replaceAll('_', '-');
}

/** One invalid input, as listed in a problem's `errors` array. */
export interface ParamError {
  /** The query parameter, or the request body's member, at fault. */
  param: string;
  detail: string;
}

export interface ApiErrorOptions {
  errors?: ParamError[];
  headers?: Record<string, string>;
  /** Extra members of the problem document (RFC 9457 extensions). */
  extensions?: Record<string, unknown>;
  cause?: unknown;
}

/** How many invalid query parameters one problem lists in `errors`; the detail counts the rest. */
export const MAX_LISTED_PARAM_ERRORS = 20;
const MAX_PARAM_NAME_LENGTH = 100;

function truncateName(name: string): string {
  return name.length > MAX_PARAM_NAME_LENGTH ? `${name.slice(0, MAX_PARAM_NAME_LENGTH)}…` : name;
}

/** An error the client should see as problem+json, with a code from the table. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: ParamError[] | undefined;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(code: ErrorCode, detail: string, options: ApiErrorOptions = {}) {
    super(detail, { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
    this.extensions = options.extensions ?? {};
  }

  static invalidParameters(errors: ParamError[]): ApiError {
    const [first] = errors;
    if (errors.length === 1 && first) return new ApiError('invalid_parameter', first.detail, { errors: [{ ...first, param: truncateName(first.param) }] });
    // A query string of 16 KiB can name a thousand unknown parameters: the answer lists a few, not an echo 20 times its size.
    const listed = errors.slice(0, MAX_LISTED_PARAM_ERRORS).map((error) => ({ ...error, param: truncateName(error.param) }));
    const more = errors.length - listed.length;
    const names = listed.map((error) => error.param).join(', ') + (more > 0 ? ` and ${more} more (not listed)` : '');
    return new ApiError('invalid_parameter', `${errors.length} query parameters are invalid: ${names}`, { errors: listed });
  }

  static invalidBody(errors: ParamError[]): ApiError {
    const [first] = errors;
    const detail =
      errors.length === 1 && first ? first.detail : `${errors.length} members of the request body are invalid: ${errors.map((e) => e.param).join(', ')}`;
    return new ApiError('invalid_body', detail, { errors });
  }
}
