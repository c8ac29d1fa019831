import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions, type RouteOptions } from 'fastify';
import type { Registry } from 'prom-client';
import { createAuthCache } from './auth/auth-cache.js';
import type { HttpLimits } from './config.js';
import type { AllowedHosts } from './domain/allowed-hosts-setting.js';
import type { CorsOrigins } from './domain/cors-origins-setting.js';
import type { FrameAncestors } from './domain/frame-ancestors-setting.js';
import { AccessLogController } from './http/access-log.js';
import { apiReferenceRoutes } from './http/api-reference-routes.js';
import { answerEveryRequestBeforeHalfClose } from './http/connection-turn.js';
import { answerNodeOwnedRequests, clientErrorHandler, frameworkErrorHandler, rememberLastResponses } from './http/framework-errors.js';
import { eventRoutes } from './http/event-routes.js';
import type { EventStreamSettings } from './http/event-stream-body.js';
import { eventStreamRoutes } from './http/event-stream-routes.js';
import type { EventStreamWakeups } from './events/event-stream-wakeups.js';
import { healthRoutes } from './http/health-routes.js';
import { lazyChildLogger } from './http/lazy-request-logger.js';
import { methodNotAllowedForEveryRoute } from './http/method-not-allowed.js';
import { closingAnswers } from './http/closing-answers.js';
import { problemAnswers } from './http/problem-answers.js';
import { realTimeGuard } from './http/real-time-guard.js';
import { MAX_ENCODED_PARAM_LENGTH } from './http/record-uid-length.js';
import { requestDatabase } from './http/request-database.js';
import { requestHooks } from './http/request-hooks.js';
import { requestIdFor } from './http/request-id.js';
import { resourceRoutes } from './http/resource-routes.js';
import { securityHeaders } from './http/security-headers.js';
import { fastifyTrustProxy, type TrustProxy } from './http/trust-proxy.js';
import { writeRoutes } from './http/write-routes.js';
import { webhookEndpointRoutes } from './http/webhook-endpoint-routes.js';
import { DEFAULT_LIST_CACHE, ListCache, type ListCacheOptions } from './listing/list-cache.js';
import type { ResourceDefinition } from './listing/resource-definition.js';
import { registerDatabaseMetrics } from './metrics/database-metrics.js';
import { registerDatabaseShareMetrics } from './metrics/database-share-metrics.js';
import { httpMetrics } from './metrics/http-metrics.js';
import { registerWriteQueueMetrics } from './metrics/write-queue-metrics.js';
import { rateLimits, type RateLimitOptions } from './rate-limits/rate-limits.js';
import { ledgerCollectionsOf, RESOURCES } from './resources/index.js';
import { events } from './events/events-resource.js';
import { servesEvents } from './events/event-types.js';
import { DEFAULT_DATABASE_SHARE, FairShare, type FairShareOptions } from './store/fair-share.js';
import type { LedgerWriter } from './ledger/ledger-writer.js';
import { NodeRole, type ReplicaLimits } from './store/node-role.js';
import { PatroniRest } from './store/patroni-rest.js';
import { portalSessionRoutes } from './portal/portal-session-routes.js';
import { portalStaticRoutes } from './portal/portal-static-routes.js';
import type { Store } from './store/store.js';
import type { DestinationPolicy } from './webhooks/destination.js';
import { SecretBox } from './webhooks/secret-box.js';

export interface AppOptions {
  store: Store;
  publicUrl?: string | undefined;
  /** The Host names /api/ routes answer for (ALLOWED_HOSTS; `serve` always passes them); any host when absent. */
  allowedHosts?: AllowedHosts;
  /** The origins whose browser pages may read answers (CORS_ALLOWED_ORIGINS); none when absent. */
  corsOrigins?: CorsOrigins;
  /** Which X-Forwarded-* hops to believe (`true`: the nearest one); none when absent. */
  trustProxy?: TrustProxy | boolean;
  logger?: FastifyServerOptions['logger'];
  /** A ready pino logger (wins over `logger`), e.g. one writing to a test buffer. */
  loggerInstance?: FastifyBaseLogger;
  /** Per-key and failed-authentication limits; none when absent. */
  rateLimit?: RateLimitOptions;
  /** Prometheus registry to record request and pool metrics in; none when absent. */
  metrics?: Registry;
  /** The collections served (RESOURCES when absent): their reads, and the ledger's writes when it is among them. */
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
  /** Slow-client timeouts and the connection cap (they matter once the app listens); Node's defaults when absent. */
  http?: HttpLimits;
  /** PostgreSQL: database time one request may use in total before it gets 503; none when absent or 0. */
  databaseRequestBudgetMs?: number;
  /** During a database outage, how often a summary line counts the 503s (default 5 s). */
  outageSummaryMs?: number;
  /** Told of every route the app registers (tests enumerate them). */
  onRoute?: (route: RouteOptions) => void;
  /** On a hot standby: answer credit limits (`sync`: a synchronous standby) or refuse them (default). */
  replicaLimits?: ReplicaLimits;
  /** Patroni REST API URLs: when given, Patroni (not replicaLimits) says whether this node's standby is the synchronous one. */
  patroniUrls?: readonly string[];
  /**
   * The process's one ledger (nodeLedger, src/node-ledger.ts), which every
   * write goes through, built on the same `share`: the app builds none.
   */
  ledger: LedgerWriter;
  /** The node's FairShare, the one its ledger was built on; else built from databaseShare. */
  share?: FairShare;
  /**
   * Webhook endpoints: the process's SecretBox (src/webhooks/webhook-key.ts; `null`: no
   * WEBHOOK_SECRET_KEY, so creation and rotation answer 503) and where endpoint URLs may point.
   * Absent (tests): a random key of this app, and the default policy (public https:// only).
   */
  webhooks?: { secretBox: SecretBox | null; destinations?: DestinationPolicy };
  /** `GET /api/events/stream/`: its heartbeat, polling, stall bound and per-key limit; DEFAULT_EVENT_STREAM for what is absent. */
  eventStream?: Partial<EventStreamSettings>;
  /** The node's event-stream wakeups, which its publisher wakes (events/node-event-publication.ts); absent (tests): the app's own, woken by polling only. */
  eventStreamWakeups?: EventStreamWakeups;
  /**
   * The portal (SPEC §9): where its built pages are (default: the package's
   * dist/portal-app/, which `npm run build` writes) and the origins that may frame
   * it (PORTAL_FRAME_ANCESTORS; none when absent).
   */
  portal?: { directory?: string; frameAncestors?: FrameAncestors };
  /** Without `share`: queries at once (the pool size) and queries one organization may have waiting (DATABASE_QUEUE_PER_ORG); DEFAULT_DATABASE_SHARE when absent. */
  databaseShare?: FairShareOptions;
}

/** The package's built portal: dist/portal-app/ beside src/ and dist/ alike (this file runs from either). */
const DEFAULT_PORTAL_DIRECTORY = fileURLToPath(new URL('../dist/portal-app/', import.meta.url));

/**
 * Builds the HTTP API on a store. No process concerns here (no listening,
 * no signals): `server.ts` does those, and tests call this through `inject`.
 * The ledger is the process's (`options.ledger`), handed in.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.loggerInstance ? { loggerInstance: options.loggerInstance } : { logger: options.logger ?? false }),
    logController: new AccessLogController(),
    childLoggerFactory: lazyChildLogger,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    trustProxy: fastifyTrustProxy(options.trustProxy),
    genReqId: requestIdFor,
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_ENCODED_PARAM_LENGTH },
    bodyLimit: 16 * 1024,
    // A request arriving while the node closes gets our problem answer instead (src/http/closing-answers.ts).
    return503OnClosing: false,
    ...(options.http ? httpServerOptions(options.http) : { http: { requireHostHeader: false } }),
  });
  answerNodeOwnedRequests(app);
  rememberLastResponses(app);
  answerEveryRequestBeforeHalfClose(app.server);
  if (options.http) {
    app.server.headersTimeout = options.http.headersTimeoutMs;
    if (options.http.maxConnections > 0) app.server.maxConnections = options.http.maxConnections;
  }

  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  const resources = options.resources ?? RESOURCES;
  const budgetMs = options.databaseRequestBudgetMs ?? 0;
  app.decorateRequest('database', undefined);
  app.decorateRequest('databaseBudget', undefined);
  const share = options.share ?? new FairShare(options.databaseShare ?? DEFAULT_DATABASE_SHARE);
  const databaseOf = requestDatabase(options.store, budgetMs, share);
  if (options.metrics) registerDatabaseShareMetrics(options.metrics, share);
  const registerMethodNotAllowed = methodNotAllowedForEveryRoute(app);

  // Hooks and errors.
  await app.register(requestHooks, { allowedHosts: options.allowedHosts, corsOrigins: options.corsOrigins ?? [] });
  await app.register(problemAnswers, { outageSummaryMs: options.outageSummaryMs });
  await app.register(closingAnswers);
  await app.register(securityHeaders, { portalFrameAncestors: options.portal?.frameAncestors });
  if (options.metrics) await app.register(httpMetrics, { registry: options.metrics, store: options.store });
  await app.register(rateLimits, { ...(options.rateLimit ?? { perMinute: 0, authFailuresPerMinute: 0 }), metrics: options.metrics });

  // Operations and documentation.
  const patroni = options.patroniUrls?.length ? new PatroniRest(options.patroniUrls) : undefined;
  const role = new NodeRole(options.store, options.replicaLimits, undefined, undefined, patroni);
  if (options.metrics) registerDatabaseMetrics(options.metrics, role);
  await app.register(healthRoutes, { databaseOf, role, metrics: options.metrics, store: options.store });
  await app.register(apiReferenceRoutes, { resources });

  // Reads, then writes. Fields moved by drawdowns and repayments are the real-time ones a lagging standby could answer stale.
  const realTimePaths = resources.filter((resource) => (resource.volatileFields ?? []).length > 0).map((resource) => `/api/${resource.path}/`);
  await app.register(realTimeGuard, { role, paths: realTimePaths, databaseOf });
  const authCache = options.authCache && createAuthCache(options.authCache);
  // The events log is listed like a collection, beside the records its events are about.
  const withEvents = servesEvents(resources);
  await app.register(resourceRoutes, {
    databaseOf,
    resources: withEvents ? [...resources, events] : resources,
    publicUrl: options.publicUrl,
    authCache,
    listCache: options.listCache === false ? undefined : new ListCache(options.listCache ?? DEFAULT_LIST_CACHE),
  });
  if (ledgerCollectionsOf(resources)) {
    if (options.metrics) registerWriteQueueMetrics(options.metrics, options.ledger);
    await app.register(writeRoutes, { ledger: options.ledger, role, resources, authCache, databaseOf });
  }
  if (withEvents) {
    await app.register(eventRoutes, { store: options.store, databaseOf, authCache });
    await app.register(eventStreamRoutes, { store: options.store, databaseOf, authCache, settings: options.eventStream, wakeups: options.eventStreamWakeups });
  }
  await app.register(webhookEndpointRoutes, {
    store: options.store,
    databaseOf,
    publicUrl: options.publicUrl,
    authCache,
    secretBox: options.webhooks ? (options.webhooks.secretBox ?? undefined) : SecretBox.fromKey(randomBytes(32)),
    destinations: options.webhooks?.destinations ?? { allowPrivate: false, allowHosts: [] },
  });
  await app.register(portalSessionRoutes, { databaseOf, publicUrl: options.publicUrl, authCache });
  await app.register(portalStaticRoutes, { directory: options.portal?.directory ?? DEFAULT_PORTAL_DIRECTORY });
  registerMethodNotAllowed();
  return app;
}

/** Fastify's server options for the slow-client limits. */
function httpServerOptions(limits: HttpLimits): {
  requestTimeout: number;
  keepAliveTimeout: number;
  http: { connectionsCheckingInterval: number; requireHostHeader: false };
} {
  return {
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks the header and request timers this often (30 s by default,
    // which would let a slow client overstay a short timeout by that much).
    // A missing Host is refused by rejectRepeatedHeaders, as problem+json, not by Node's bare 400.
    http: { connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(limits.headersTimeoutMs / 10))), requireHostHeader: false },
  };
}
