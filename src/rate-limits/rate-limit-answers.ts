import { ApiError, type ApiErrorOptions } from '../domain/errors.js';
import type { Budget } from './request-limiter.js';

// What the request budget, the write budget and the failed-login throttle put on their answers.

/** Whole seconds until `ms` has passed, at least 1 (Retry-After and X-RateLimit-Reset). */
export function seconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

export function budgetHeaders(budget: Budget): Record<string, string> {
  return {
    'x-ratelimit-limit': String(budget.limit),
    'x-ratelimit-remaining': String(Math.max(0, budget.limit - budget.count)),
    'x-ratelimit-reset': seconds(budget.resetMs),
  };
}

/**
 * A 429 refusal: an ApiError made without a stack trace. A refusal is an answer, never logged with its
 * stack, and capturing one was a tenth of a refused request's CPU (12 µs of 120, profiled under a key's
 * flood of 8,000 refusals a second): refusing must cost far less than serving.
 */
export function rateLimited(detail: string, options: ApiErrorOptions): ApiError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new ApiError('rate_limited', detail, options);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

// The same answer whether the presented key was right or wrong: a blocked address learns nothing.
export function addressBlocked(resetMs: number, max: number): ApiError {
  return rateLimited(`too many failed authentications from this address; retry in ${seconds(resetMs)} s`, {
    headers: {
      'retry-after': seconds(resetMs),
      'x-ratelimit-limit': String(max),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': seconds(resetMs),
    },
  });
}
