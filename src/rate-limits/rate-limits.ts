import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import type { AuthenticateHook } from '../auth/basic-auth-hook.js';
import { ApiError } from '../domain/errors.js';
import { registerRedisBreakerGauge } from '../metrics/rate-limit-metrics.js';
import { throttleAddressOf } from './client-address.js';
import { addressBlocked, budgetHeaders, pauseFor, rateLimited, refuseOverBudget, seconds, type Pause } from './rate-limit-answers.js';
import { RedisBreaker } from './redis-breaker.js';
import { RedisCounters } from './redis-counters.js';
import { RequestLimiter, WINDOW_MS, type Budget, type Verdict } from './request-limiter.js';
import { unauthenticatedBudgetGuard } from './unauthenticated-budget.js';
import { writeBudgetGuard } from './write-rate-limit.js';

export const DEFAULT_REDIS_PREFIX = 'lending-api:rate-limit:';

export interface RateLimitOptions {
  /** Requests per minute per API key; 0 turns the limit off. */
  perMinute: number;
  /** Writes (POST) per minute per API key, a budget of their own; 0 or absent: no limit. */
  writesPerMinute?: number;
  /** Failed authentications per minute per client address; 0 turns the throttle off. */
  authFailuresPerMinute: number;
  /** Requests per minute per client address to the routes that take no API key; 0 or absent: no limit. */
  unauthenticatedPerMinute?: number;
  /** Counters shared by every instance; in this process's memory when absent. */
  redis?: Redis | undefined;
  /** Prefix of every Redis key, so several deployments (or test runs) can share one Redis. */
  redisPrefix?: string;
  /** How long a request waits for Redis before it is counted in memory and the breaker opens (default 200). */
  redisTimeoutMs?: number;
  /** How long the breaker leaves Redis alone after a failure before probing it (default 5000). */
  redisCooldownMs?: number;
  /** Where to publish the breaker's state. */
  metrics?: Registry | undefined;
  /** How a refusal of a key far past its budget waits (refuseOverBudget); a timer unless a test holds it. */
  pause?: Pause | undefined;
}

/** A limiter's check around authentication: throws the refusal; a promise only when it has to wait (Redis). */
type Guard = (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) => void | Promise<unknown>;

interface Guards {
  /** Before authentication: 429 for an address this process knows is blocked (no waiting, no database work). */
  beforeAuth?: (request: FastifyRequest) => void;
  /** After authentication: the shared failure count and the per-key request budget. */
  afterAuth?: Guard;
  /** After authentication on write routes: the shared failure count and the per-key write budget. */
  afterWriteAuth?: Guard;
  /** Counts a failed authentication against the client's address; throws 429 past the allowance. */
  onAuthFailure?: (request: FastifyRequest) => Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    requestLimits: Guards;
  }
}

/**
 * Registers the limiters without applying them to any route:
 * `authenticateWithLimits` places them around the authentication hook of the
 * authenticated routes. See RequestLimiter for how they count, and
 * RedisBreaker for what happens when Redis fails or hangs.
 *
 * Hand-written rather than @fastify/rate-limit: its store counts one key per
 * call (two Redis round trips for the throttle and the budget), and on a
 * Redis error it can only skip the limit (fail open) or fail the request.
 */
export const rateLimits = fp(
  async (app: FastifyInstance, options: RateLimitOptions) => {
    const guards: Guards = {};
    app.decorate('requestLimits', guards);
    const { perMinute, authFailuresPerMinute: maxFailures, writesPerMinute = 0, unauthenticatedPerMinute = 0 } = options;
    if (perMinute <= 0 && maxFailures <= 0 && writesPerMinute <= 0 && unauthenticatedPerMinute <= 0) return;

    let shared: { counters: RedisCounters; breaker: RedisBreaker } | undefined;
    if (options.redis) {
      const counters = new RedisCounters(options.redis, options.redisPrefix ?? DEFAULT_REDIS_PREFIX, WINDOW_MS);
      const breaker = new RedisBreaker({
        timeoutMs: options.redisTimeoutMs ?? 200,
        cooldownMs: options.redisCooldownMs ?? 5000,
        probe: () => counters.ping(),
        log: app.log,
      });
      shared = { counters, breaker };
      if (options.metrics) registerRedisBreakerGauge(options.metrics, breaker);
      app.addHook('onClose', async () => breaker.stop());
    }
    const limiter = new RequestLimiter({ perMinute, authFailuresPerMinute: maxFailures, shared });
    if (unauthenticatedPerMinute > 0) {
      app.addHook('onRequest', unauthenticatedBudgetGuard(new RequestLimiter({ perMinute: unauthenticatedPerMinute, authFailuresPerMinute: 0, shared })));
    }
    const pause = options.pause ?? pauseFor;
    if (writesPerMinute > 0) {
      guards.afterWriteAuth = writeBudgetGuard(new RequestLimiter({ perMinute: writesPerMinute, authFailuresPerMinute: maxFailures, shared }), maxFailures, pause);
    }

    guards.afterAuth = (request, reply) => {
      const keyId = request.auth?.keyId;
      if (!keyId) return;
      const verdict = limiter.afterSuccess(throttleAddressOf(request.ip), keyId);
      if (verdict instanceof Promise) return verdict.then((settled) => admitOrRefuse(settled, reply, maxFailures, pause));
      return admitOrRefuse(verdict, reply, maxFailures, pause);
    };

    if (maxFailures > 0) {
      guards.beforeAuth = (request) => {
        const blockedMs = limiter.blockedBeforeAuth(throttleAddressOf(request.ip));
        if (blockedMs !== undefined) throw addressBlocked(blockedMs, maxFailures);
      };
      guards.onAuthFailure = async (request) => {
        const verdict: Verdict = await limiter.afterFailure(throttleAddressOf(request.ip));
        if (verdict.kind === 'address_blocked') throw addressBlocked(verdict.resetMs, maxFailures);
      };
    }
  },
  { name: 'lending-api-rate-limits' },
);

/** Admits the request (its budget's headers set), or throws its refusal — or returns it paused (refuseOverBudget). */
function admitOrRefuse(verdict: Verdict, reply: FastifyReply, maxFailures: number, pause: Pause): Promise<never> | undefined {
  if (verdict.kind === 'address_blocked') throw addressBlocked(verdict.resetMs, maxFailures);
  if (verdict.kind === 'over_budget') {
    const refusal = refuseOverBudget(overBudget(verdict.budget), verdict.budget, pause);
    if (refusal instanceof Promise) return refusal;
    throw refusal;
  }
  if (verdict.budget) reply.headers(budgetHeaders(verdict.budget));
  return undefined;
}

function overBudget(budget: Budget): ApiError {
  return rateLimited(
    `this API key made more than ${budget.limit} requests in a minute; retry in ${seconds(budget.resetMs)} s`,
    { headers: { 'retry-after': seconds(budget.resetMs), ...budgetHeaders(budget) } },
  );
}

/**
 * Adds `authenticate` to an encapsulated scope, wrapped by the limiters: the
 * known-blocked check runs before it (a blocked address costs no database
 * work), the shared check and the per-key budget after it, and a failure is
 * counted against the client's address. Write routes (`budget: 'writes'`)
 * count against the key's write budget instead of its request budget.
 */
export function authenticateWithLimits(scope: FastifyInstance, authenticate: AuthenticateHook, budget: 'reads' | 'writes' = 'reads'): void {
  const guards = scope.hasDecorator('requestLimits') ? scope.requestLimits : ({} as Guards);
  const { beforeAuth, onAuthFailure } = guards;
  const afterAuth = budget === 'writes' ? guards.afterWriteAuth : guards.afterAuth;

  async function authenticateThenLimit(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      await authenticate.call(this, request, reply);
    } catch (error) {
      if (onAuthFailure && error instanceof ApiError && error.code === 'unauthorized') await onAuthFailure(request);
      throw error;
    }
    await afterAuth?.call(this, request, reply);
  }

  // One hook in callback style for the three steps: cached credentials and counters in memory (the
  // common case) pass without a promise, where three async hooks cost three promises and microtask turns.
  scope.addHook('onRequest', function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
    let waiting: void | Promise<unknown>;
    try {
      beforeAuth?.(request);
      waiting = authenticate.fromCache?.(request) ? afterAuth?.call(this, request, reply) : authenticateThenLimit.call(this, request, reply);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (waiting) waiting.then(() => done(), done);
    else done();
  });
}
