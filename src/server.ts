import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import { AggregatorRegistry, Registry } from 'prom-client';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { connectRedis } from './rate-limits/redis-client.js';
import { createLogger } from './logger.js';
import { startMetricsServer, type MetricsServer } from './metrics/metrics-server.js';
import { collectProcessMetrics } from './metrics/process-metrics.js';
import { migrate, pendingMigrations } from './store/migrate.js';
import { openStore, type OpenStoreOptions } from './store/open-store.js';
import type { Store } from './store/store.js';
import { DEFAULT_LIST_CACHE } from './listing/list-cache.js';
import { assertSchemaMatches } from './listing/schema-check.js';
import { RESOURCES } from './resources/index.js';
import { scheduleIdempotencyPrune } from './ledger/idempotency-prune-job.js';
import { FairShare } from './store/fair-share.js';
import { nodeEventPublication } from './events/node-event-publication.js';
import { DEFAULT_EVENT_STREAM } from './http/event-stream-body.js';
import { scheduleEventPrune } from './events/event-prune-job.js';
import { deliverySettings, nodeDeliverer } from './node-deliverer.js';
import { nodeLedger } from './node-ledger.js';
import { renderDeliveredEvent } from './events/event-body.js';

/** How often `serve` prunes events past EVENT_RETENTION_DAYS (a run deletes in batches of 1000 rows). */
const EVENT_PRUNE_INTERVAL_MS = 15 * 60_000;
import { loadWebhookKey } from './webhooks/webhook-key.js';

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly url: string;
  /** The Prometheus endpoint, when METRICS_PORT is set (and this is not a cluster worker). */
  readonly metricsUrl: string | undefined;
  /** Stops accepting, lets in-flight requests finish, closes the store. */
  close(): Promise<void>;
}

/** How the serving process opens its store: pool size, lock wait and timeouts from the config. */
export function serverStoreOptions(config: Config): OpenStoreOptions {
  return {
    poolSize: config.databasePoolSize,
    lockWaitMs: config.pgliteLockTimeoutMs,
    pgliteSharedBuffers: config.pgliteSharedBuffers,
    connectionTimeoutMs: config.databaseConnectTimeoutMs,
    queryTimeoutMs: config.databaseQueryTimeoutMs,
    poolWaitMs: config.databasePoolWaitMs,
    namedStatements: config.databasePreparedStatements,
  };
}

/**
 * Process work: open the store, make sure the schema is current, listen.
 * The embedded store is migrated automatically; PostgreSQL must be migrated
 * with `lending-api migrate`, so a deploy never changes a shared schema by surprise.
 */
export async function startServer(config: Config, store?: Store, logDestination?: DestinationStream): Promise<RunningServer> {
  const openedStore = store ?? (await openStore(config.store, serverStoreOptions(config)));
  const logger = createLogger(config.logLevel, logDestination);
  let redis: Redis | undefined;
  let metricsServer: MetricsServer | undefined;
  try {
    if (openedStore.kind === 'pglite') await migrate(openedStore);
    else {
      const pending = await pendingMigrations(openedStore);
      if (pending.length > 0) {
        throw new Error(
          `the database schema is behind (${pending.length} migration(s) pending: ${pending.map((m) => `${m.version}_${m.name}`).join(', ')}); run 'lending-api migrate' first`,
        );
      }
    }
    await assertSchemaMatches(openedStore, RESOURCES);
    const webhookKey = await loadWebhookKey(config.store, config.webhookSecretKey);
    if (webhookKey.source.kind === 'missing') {
      logger.warn('WEBHOOK_SECRET_KEY is not set: webhook endpoints cannot be created or have their secrets rotated (503 webhook_secret_key_missing) until it is');
    }
    if (config.redisUrl && config.rateLimitPerMinute + config.authFailuresPerMinute + config.writeRateLimitPerMinute + config.unauthenticatedRateLimitPerMinute > 0) {
      redis = await connectRedis(config.redisUrl, logger);
    }
    const metrics = new Registry();
    collectProcessMetrics(metrics);
    // In a cluster the primary serves /metrics, summed over every worker.
    if (cluster.isWorker) {
      // Constructing one is what makes a worker answer the primary's metrics requests.
      void new AggregatorRegistry();
      AggregatorRegistry.setRegistries([metrics]);
    }
    else if (config.metricsPort !== undefined) metricsServer = await startMetricsServer(metrics, config.metricsPort, config.metricsHost);
    // The node's share of the database and its one ledger: every write of this process goes through it.
    const share = new FairShare({ slots: config.databasePoolSize, queuePerTenant: config.databaseQueuePerOrg });
    const deliverer = config.webhookDelivery
      ? nodeDeliverer(openedStore, deliverySettings(config, webhookKey.box), metrics, logger, renderDeliveredEvent)
      : undefined;
    if (!config.webhookDelivery && config.store.kind === 'pglite') {
      // The embedded store is this process's alone: no `deliver` process can open it while this one serves.
      logger.warn('webhooks are not delivered by this node (--deliver off), and on the embedded store no other process can deliver them while it serves: they wait until `lending-api deliver` runs on this data directory after it stops; serve with PostgreSQL to run delivery workers beside it');
    } else if (!config.webhookDelivery) {
      logger.info('webhooks are not delivered by this node (--deliver off): `lending-api deliver` processes deliver them');
    }
    // A publication of this node wakes the deliverer and this node's event streams at once.
    const { publisher, streamWakeups } = nodeEventPublication(openedStore, {
      log: logger,
      streamPollIntervalMs: DEFAULT_EVENT_STREAM.pollIntervalMs,
      onPublished: (orgId) => deliverer?.wake(orgId),
    });
    const ledger = nodeLedger(openedStore, config, { share, recorded: (orgId) => publisher.notify(orgId) });
    const app = await buildApp({
      store: openedStore,
      ledger,
      share,
      publicUrl: config.publicUrl,
      allowedHosts: config.allowedHosts,
      corsOrigins: config.corsOrigins,
      portal: { frameAncestors: config.portalFrameAncestors },
      trustProxy: config.trustProxy,
      loggerInstance: logger,
      metrics,
      rateLimit: {
        perMinute: config.rateLimitPerMinute,
        writesPerMinute: config.writeRateLimitPerMinute,
        authFailuresPerMinute: config.authFailuresPerMinute,
        unauthenticatedPerMinute: config.unauthenticatedRateLimitPerMinute,
        redis,
        redisTimeoutMs: config.redisTimeoutMs,
        redisCooldownMs: config.redisBreakerCooldownMs,
      },
      authCache: { ttlMs: config.authCacheTtlMs },
      listCache: config.listCacheEntries > 0 && { ...DEFAULT_LIST_CACHE, entries: config.listCacheEntries },
      http: config.http,
      databaseRequestBudgetMs: config.databaseRequestBudgetMs,
      replicaLimits: config.replicaLimits,
      patroniUrls: config.patroniUrls,
      webhooks: { secretBox: webhookKey.box ?? null, destinations: config.webhookDestinations },
      eventStreamWakeups: streamWakeups,
    });
    const pruning = scheduleIdempotencyPrune(openedStore, config.idempotencyPruneIntervalMs, logger);
    const eventPruning = scheduleEventPrune(openedStore, config.eventRetentionDays, EVENT_PRUNE_INTERVAL_MS, logger);
    const address = await app.listen({ port: config.port, host: config.host });
    publisher.start();
    deliverer?.start();
    let closing: Promise<void> | undefined;
    return {
      app,
      store: openedStore,
      url: address,
      metricsUrl: metricsServer?.url,
      close: () => {
        closing ??= (async () => {
          pruning.stop();
          eventPruning.stop();
          // Attempts in flight are abandoned: their claims expire and another node (or this one, restarted) makes them.
          await closeWithin(app, config.shutdownTimeoutMs).finally(() => Promise.all([publisher.stop(), deliverer?.stop()]));
          await metricsServer?.close();
          await redis?.quit().catch(() => redis?.disconnect());
          await openedStore.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await metricsServer?.close();
    redis?.disconnect();
    if (!store) await openedStore.close();
    throw error;
  }
}

/**
 * Stops accepting connections and waits for in-flight requests; after
 * `timeoutMs` the remaining connections are cut so shutdown always ends.
 */
async function closeWithin(app: FastifyInstance, timeoutMs: number): Promise<void> {
  const timer = setTimeout(() => {
    app.log.warn(`shutdown: requests still running after ${timeoutMs} ms; closing their connections`);
    app.server.closeAllConnections();
  }, timeoutMs);
  try {
    await app.close();
  } finally {
    clearTimeout(timer);
  }
}

/** Closes the server (or delivery worker) on SIGTERM/SIGINT, then exits 0 (1 if closing failed). */
export function closeOnSignals(server: Pick<RunningServer, 'close'>, log: (message: string) => void): void {
  const shutdown = (signal: NodeJS.Signals) => {
    log(`${signal} received: finishing in-flight requests, then exiting`);
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`shutdown failed: ${String(error)}`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}
