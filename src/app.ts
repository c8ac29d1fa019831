import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import { AccessLogController } from './http/access-log.js';
import { clientErrorHandler, frameworkErrorHandler } from './http/framework-errors.js';
import { rateLimits, type RateLimitOptions } from './http/rate-limits.js';
import { securityHeaders } from './http/security-headers.js';
import { httpMetrics } from './metrics/http-metrics.js';
import { apiReferenceRoutes } from './http/api-reference-routes.js';
import { createAuthCache } from './auth/auth-cache.js';
import { healthRoutes } from './http/health-routes.js';
import { ApiError } from './domain/errors.js';
import { sendProblem, toApiError } from './http/problem.js';
import { requestIdFor } from './http/request-id.js';
import { resourceRoutes } from './http/resource-routes.js';
import { DEFAULT_LIST_CACHE, ListCache, type ListCacheOptions } from './listing/list-cache.js';
import type { ResourceDefinition } from './listing/resource-definition.js';
import { RESOURCES } from './resources/index.js';
import type { Store } from './store/store.js';
import { NodeRole, type ReplicaLimits } from './store/node-role.js';
import { realTimeGuard } from './http/real-time-guard.js';

export interface AppOptions {
  store: Store;
  publicUrl?: string | undefined;
  trustProxy?: boolean;
  logger?: FastifyServerOptions['logger'];
  /** A ready pino logger (wins over `logger`), e.g. one writing to a test buffer. */
  loggerInstance?: FastifyBaseLogger;
  /** Per-key and failed-authentication limits; none when absent. */
  rateLimit?: RateLimitOptions;
  /** Prometheus registry to record request and pool metrics in; none when absent. */
  metrics?: Registry;
  resources?: readonly ResourceDefinition[];
  /**
   * Reuse a successful credential check for this long (the revocation bound);
   * 0 or absent checks every request against the store. `now` is for tests.
   */
  authCache?: { ttlMs: number; now?: () => number };
  /**
   * Remember exact counts and deep-page anchors per table version (see
   * ListCache); `false` computes everything on every request. Default:
   * DEFAULT_LIST_CACHE.
   */
  listCache?: ListCacheOptions | false;
  /** On a hot standby: answer credit limits (`sync`: a synchronous standby) or refuse them (default). */
  replicaLimits?: ReplicaLimits;
}

/**
 * Builds the HTTP API on a store. No process concerns here (no listening,
 * no signals): `server.ts` does those, and tests call this through `inject`.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.loggerInstance ? { loggerInstance: options.loggerInstance } : { logger: options.logger ?? false }),
    logController: new AccessLogController(),
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    trustProxy: options.trustProxy ?? false,
    genReqId: requestIdFor,
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 255 },
    bodyLimit: 16 * 1024,
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.setErrorHandler(async (error, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.status >= 500) request.log.error({ err: error }, apiError.message);
    return sendProblem(request, reply, apiError);
  });

  app.setNotFoundHandler(async (request, reply) =>
    sendProblem(request, reply, new ApiError('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`)),
  );

  await app.register(securityHeaders);
  if (options.metrics) await app.register(httpMetrics, { registry: options.metrics, store: options.store });
  await app.register(rateLimits, options.rateLimit ?? { perMinute: 0, authFailuresPerMinute: 0 });
  const role = new NodeRole(options.store, options.replicaLimits);
  await app.register(healthRoutes, { store: options.store, role });
  await app.register(apiReferenceRoutes, { resources: options.resources ?? RESOURCES });
  const resources = options.resources ?? RESOURCES;
  // Fields moved by drawdowns and repayments are the real-time ones a lagging standby could answer stale.
  const realTimePaths = resources.filter((resource) => (resource.volatileFields ?? []).length > 0).map((resource) => `/api/${resource.path}/`);
  await app.register(realTimeGuard, { role, paths: realTimePaths });
  await app.register(resourceRoutes, {
    store: options.store,
    resources: options.resources ?? RESOURCES,
    publicUrl: options.publicUrl,
    authCache: options.authCache && createAuthCache(options.authCache),
    listCache: options.listCache === false ? undefined : new ListCache(options.listCache ?? DEFAULT_LIST_CACHE),
  });
  return app;
}
