import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Redis } from 'ioredis';
import { ApiError } from '../domain/errors.js';

export interface RateLimitOptions {
  /** Requests per minute per API key; 0 turns the limit off. */
  perMinute: number;
  /** Failed authentications per minute per client address; 0 turns the throttle off. */
  authFailuresPerMinute: number;
  /** Counters shared by every instance; in this process's memory when absent. */
  redis?: Redis | undefined;
  /** Prefix of every Redis key, so several deployments (or test runs) can share one Redis. */
  redisPrefix?: string;
}

const WINDOW_MS = 60_000;

interface Guards {
  /** Before authentication: 429 for an address that failed too often. */
  beforeAuth?: onRequestAsyncHookHandler;
  /** After authentication: the per-key request budget. */
  afterAuth?: onRequestAsyncHookHandler;
  /** Counts a failed authentication against the client's address. */
  onAuthFailure?: (request: FastifyRequest) => Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    requestLimits: Guards;
  }
}

/**
 * Registers the limiters (backed by @fastify/rate-limit) without applying
 * them to any route: `authenticateWithLimits` places them around the
 * authentication hook of the authenticated routes.
 *
 * When Redis is unreachable both limiters fail open: the API keeps answering
 * (unlimited) rather than refusing every client because of a cache outage.
 */
export const rateLimits = fp(
  async (app: FastifyInstance, options: RateLimitOptions) => {
    const guards: Guards = {};
    app.decorate('requestLimits', guards);
    if (options.perMinute <= 0 && options.authFailuresPerMinute <= 0) return;

    await app.register(fastifyRateLimit, {
      global: false,
      max: options.perMinute,
      timeWindow: WINDOW_MS,
      skipOnError: true,
      ...(options.redis ? { redis: options.redis, nameSpace: options.redisPrefix ?? 'lending-api:rate-limit:' } : {}),
      keyGenerator: (request) => `key:${request.auth?.keyId ?? request.ip}`,
      errorResponseBuilder: (_request, context) =>
        rateLimited(
          context.ttl,
          `this API key made more than ${context.max} requests in a minute; retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s`,
          context.max,
        ),
    });

    if (options.perMinute > 0) guards.afterAuth = app.rateLimit();

    if (options.authFailuresPerMinute > 0) {
      const max = options.authFailuresPerMinute;
      const failures = app.createRateLimit({ max, timeWindow: WINDOW_MS, skipOnError: true, keyGenerator: (request) => `auth-failures:${request.ip}` });
      guards.beforeAuth = async (request) => {
        const state = await failures(request, { increment: false });
        if (!state.isAllowed && state.remaining === 0) {
          throw rateLimited(
            state.ttl,
            `too many failed authentications from this address; retry in ${Math.max(1, state.ttlInSeconds)} s`,
            max,
          );
        }
      };
      guards.onAuthFailure = async (request) => {
        await failures(request);
      };
    }
  },
  { name: 'lending-api-rate-limits' },
);

function rateLimited(ttlMs: number, detail: string, max: number): ApiError {
  const seconds = String(Math.max(1, Math.ceil(ttlMs / 1000)));
  return new ApiError('rate_limited', detail, {
    headers: {
      'retry-after': seconds,
      'x-ratelimit-limit': String(max),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': seconds,
    },
  });
}

/**
 * Adds `authenticate` to an encapsulated scope, wrapped by the limiters: the
 * failed-authentication throttle runs before it (so a blocked address costs
 * no database work and learns nothing), the per-key budget after it.
 */
export function authenticateWithLimits(scope: FastifyInstance, authenticate: onRequestAsyncHookHandler): void {
  const { beforeAuth, afterAuth, onAuthFailure } = scope.hasDecorator('requestLimits') ? scope.requestLimits : ({} as Guards);
  if (beforeAuth) scope.addHook('onRequest', beforeAuth);
  if (onAuthFailure) {
    scope.addHook('onRequest', async function (request: FastifyRequest, reply: FastifyReply) {
      try {
        await authenticate.call(this, request, reply);
      } catch (error) {
        if (error instanceof ApiError && error.code === 'unauthorized') await onAuthFailure(request);
        throw error;
      }
    });
  } else scope.addHook('onRequest', authenticate);
  if (afterAuth) scope.addHook('onRequest', afterAuth);
}
