import type { onRequestAsyncHookHandler } from 'fastify';
import type { ApiError } from '../domain/errors.js';
import { throttleAddressOf } from './client-address.js';
import { addressBlocked, budgetHeaders, rateLimited, refuseOverBudget, seconds, type Pause } from './rate-limit-answers.js';
import type { Budget, RequestLimiter } from './request-limiter.js';

/**
 * Writes have a budget of their own per API key (WRITE_RATE_LIMIT_PER_MINUTE),
 * counted by a RequestLimiter of their own on the same Redis (and the same
 * in-memory fallback) as the request budget. Its counters are named
 * `requests:writes:<key id>`, so they never mix with the key's read budget.
 */
export function writeBudgetGuard(limiter: RequestLimiter, maxFailures: number, pause: Pause): onRequestAsyncHookHandler {
  return async (request, reply) => {
    const keyId = request.auth?.keyId;
    if (!keyId) return;
    const verdict = await limiter.afterSuccess(throttleAddressOf(request.ip), `writes:${keyId}`);
    if (verdict.kind === 'address_blocked') throw addressBlocked(verdict.resetMs, maxFailures);
    if (verdict.kind === 'over_budget') throw await refuseOverBudget(overWriteBudget(verdict.budget), verdict.budget, pause);
    if (verdict.budget) reply.headers(budgetHeaders(verdict.budget));
  };
}

function overWriteBudget(budget: Budget): ApiError {
  return rateLimited(
    `this API key made more than ${budget.limit} writes in a minute; retry in ${seconds(budget.resetMs)} s (reads have a budget of their own)`,
    { headers: { 'retry-after': seconds(budget.resetMs), ...budgetHeaders(budget) } },
  );
}
