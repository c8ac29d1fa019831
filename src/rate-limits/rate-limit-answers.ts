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

/** How long at most a key that keeps sending far past its budget waits for each refusal. */
export const PERSISTENT_REFUSAL_PAUSE_MS = 1000;

/** Waits `ms`; injectable so tests can hold a refusal and let it go. */
export type Pause = (ms: number) => Promise<void>;

export const pauseFor: Pause = (ms) =>
  new Promise((resolve) => {
    setTimeout(resolve, ms).unref();
  });

/**
 * The refusal of a key over its budget, at once, or — when the key has sent
 * more than twice its budget in the window, so it went on past `limit`
 * refusals that each said when to retry — after a pause of a half to one
 * PERSISTENT_REFUSAL_PAUSE_MS (never past the window's end). A refusal costs
 * little CPU, but a client that ignores Retry-After resends the moment it is
 * answered: answered at once, a few hundred connections keep the event loop
 * busy with thousands of refusals a second, and every other organization's
 * request waits behind them. Paused, each of its connections gets about one
 * answer a pause (pipelined requests wait for the answer before them), and the
 * node's CPU stays with the others. Requests on other connections are not
 * delayed, and nothing is counted twice.
 */
export function refuseOverBudget(refusal: ApiError, budget: Budget, pause: Pause): ApiError | Promise<never> {
  if (budget.count <= 2 * budget.limit) return refusal;
  // Between half and all of the pause: refusals held together are not all answered in the same instant.
  const ms = Math.min(PERSISTENT_REFUSAL_PAUSE_MS * (0.5 + Math.random() / 2), budget.resetMs);
  return pause(ms).then(() => {
    throw refusal;
  });
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
