import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { redactApiKeys } from '../domain/key-shaped-text.js';
import { StoreUnavailableError } from '../store/store.js';
import { DatabaseBudgetExceededError } from '../store/database-budget.js';
import { DatabaseOverloadedError } from '../store/fair-share.js';
import { ApiError, ERROR_CODES, PROBLEM_CONTENT_TYPE, problemType, type ErrorCode } from '../domain/errors.js';
import { MAX_RETRY_AFTER_SECONDS } from '../domain/header-values.js';
import { boundedDetail } from '../domain/answer-bounds.js';
import { MAX_WRITE_BODY_BYTES } from '../ledger/write-limits.js';

export { PROBLEM_CONTENT_TYPE };

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  errors?: { param: string; detail: string }[];
  request_id: string;
  [extension: string]: unknown;
}

/**
 * The problem document of an error. Every text in it that may quote the
 * client (a path, a parameter's name or value, a body member) passes
 * through redactApiKeys here, the one place problems are made: a key pasted
 * into the wrong place is never echoed back; and every detail is cut to
 * MAX_DETAIL_LENGTH (boundedDetail), however long the quoted input.
 */
export function problemDocument(error: ApiError, requestId: string): ProblemDocument {
  return {
    ...redactedExtensions(error.extensions),
    type: problemType(error.code),
    title: ERROR_CODES[error.code].title,
    status: error.status,
    detail: boundedDetail(redactApiKeys(error.message)),
    code: error.code,
    ...(error.errors ? { errors: error.errors.map((e) => ({ param: redactApiKeys(e.param), detail: boundedDetail(redactApiKeys(e.detail)) })) } : {}),
    request_id: requestId,
  };
}

function redactedExtensions(extensions: Record<string, unknown>): Record<string, unknown> {
  const entries = Object.entries(extensions);
  if (entries.length === 0) return extensions;
  return Object.fromEntries(entries.map(([name, value]) => [name, typeof value === 'string' ? redactApiKeys(value) : value]));
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, name === 'retry-after' ? boundedRetryAfter(value) : value);
  return reply.code(error.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problemDocument(error, request.id)));
}

/** Every Retry-After the service sends is made here: at most MAX_RETRY_AFTER_SECONDS, whoever estimated it. */
function boundedRetryAfter(value: string): string {
  return String(Math.min(MAX_RETRY_AFTER_SECONDS, Number(value)));
}

/**
 * Turns anything thrown into an ApiError. Unknown errors become a 500 that
 * tells the client nothing about internals; the cause is kept for the log.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const fastifyError = error as Partial<FastifyError>;
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = clientErrorCode(status);
    return new ApiError(code, FRAMEWORK_DETAILS[fastifyError.code ?? ''] ?? fastifyError.message ?? ERROR_CODES[code].title, { cause: error });
  }
  if (error instanceof DatabaseOverloadedError) {
    const why = error.reason === 'no-connection' ? 'the database is answering, but this node is too busy' : "the database is answering, but this organization's requests exceed its share of it on this node";
    return new ApiError('overloaded', `overloaded: ${error.message} (${why}); nothing was changed; retry after 1 s`, {
      headers: { 'retry-after': '1' },
      cause: error,
    });
  }
  if (error instanceof StoreUnavailableError) {
    const detail =
      error.cause instanceof DatabaseBudgetExceededError
        ? `the database did not answer within this request's database time (${error.cause.budgetMs} ms); retry shortly`
        : 'the database is unreachable; retry shortly';
    return new ApiError('service_unavailable', detail, {
      headers: { 'retry-after': '1' },
      cause: error,
    });
  }
  return new ApiError('internal_error', 'an unexpected error occurred; quote the request_id when reporting it', { cause: error });
}

/** Fastify's own wording names neither the media type nor the size wanted; only the write routes read a body. */
const FRAMEWORK_DETAILS: Readonly<Record<string, string>> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'send the body as application/json (UTF-8)',
  FST_ERR_CTP_BODY_TOO_LARGE: `the body is larger than the ${MAX_WRITE_BODY_BYTES} bytes a write may send`,
};

function clientErrorCode(status: number): ErrorCode {
  switch (status) {
    case 401:
      return 'unauthorized';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 406:
      return 'not_acceptable';
    case 413:
      return 'payload_too_large';
    case 415:
      return 'unsupported_media_type';
    case 429:
      return 'rate_limited';
    default:
      return 'bad_request';
  }
}
