import type { FastifyReply, onRequestHookHandler } from 'fastify';
import type { ApiError } from '../domain/errors.js';
import { throttleAddressOf } from './client-address.js';
import { budgetHeaders, rateLimited, seconds } from './rate-limit-answers.js';
import type { Budget, RequestLimiter, Verdict } from './request-limiter.js';

/** The routes that take no API key: the probes, the document, the reference page with its assets, the portal's pages and its link exchange. */
export function takesNoKey(url: string | undefined): boolean {
  return (
    url === '/healthz' ||
    url === '/readyz' ||
    url === '/api/openapi.json' ||
    url === '/docs' ||
    url?.startsWith('/docs/') === true ||
    url === '/api/portal_sessions/exchange/' ||
    url?.startsWith('/portal/') === true
  );
}

/**
 * UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: the routes that take no API key
 * (/readyz asks the database, /api/openapi.json is some 300 KB) have a budget
 * per client address (an IPv6 /64 as one), counted like the failed-login
 * throttle (in Redis when REDIS_URL is set, else in memory) under
 * `requests:unauthenticated:<address>`. Their answers carry X-RateLimit-*;
 * past the budget, 429 with Retry-After. A 405 on those paths is not counted.
 */
export function unauthenticatedBudgetGuard(limiter: RequestLimiter): onRequestHookHandler {
  return (request, reply, done) => {
    const config = request.routeOptions.config;
    if (config.answersMethodNotAllowed || !takesNoKey(request.routeOptions.url)) {
      done();
      return;
    }
    const address = throttleAddressOf(request.ip);
    let verdict: Verdict | Promise<Verdict>;
    try {
      verdict = limiter.afterSuccess(address, `unauthenticated:${address}`);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (verdict instanceof Promise) {
      verdict.then((settled) => done(admitted(settled, reply)), done);
      return;
    }
    done(admitted(verdict, reply));
  };
}

function admitted(verdict: Verdict, reply: FastifyReply): ApiError | undefined {
  if (verdict.kind === 'over_budget') return overBudget(verdict.budget);
  if (verdict.kind === 'allowed' && verdict.budget) reply.headers(budgetHeaders(verdict.budget));
  return undefined;
}

function overBudget(budget: Budget): ApiError {
  return rateLimited(
    `this address made more than ${budget.limit} requests in a minute to the routes that take no API key (probes, API reference, portal pages, link exchange); retry in ${seconds(budget.resetMs)} s`,
    { headers: { 'retry-after': seconds(budget.resetMs), ...budgetHeaders(budget) } },
  );
}
