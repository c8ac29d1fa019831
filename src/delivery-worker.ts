import type { DestinationStream } from 'pino';
import { Registry } from 'prom-client';
import type { Config } from './config.js';
import { renderDeliveredEvent } from './events/event-body.js';
import { DEFAULT_EVENT_PUBLISHER, EventPublisher } from './events/event-publisher.js';
import { PublicationListener } from './events/publication-notices.js';
import { createLogger } from './logger.js';
import { startMetricsServer, type MetricsServer } from './metrics/metrics-server.js';
import { collectProcessMetrics } from './metrics/process-metrics.js';
import { deliverySettings, nodeDeliverer } from './node-deliverer.js';
import { migrate, pendingMigrations } from './store/migrate.js';
import { openStore } from './store/open-store.js';
import { PostgresStore } from './store/postgres-store.js';
import type { Store } from './store/store.js';
import { serverStoreOptions } from './server.js';
import { loadWebhookKey } from './webhooks/webhook-key.js';

export interface RunningDeliveryWorker {
  readonly store: Store;
  /** The Prometheus endpoint, when METRICS_PORT is set. */
  readonly metricsUrl: string | undefined;
  /** Stops claiming (attempts in flight are abandoned: their claims expire), closes the store. */
  close(): Promise<void>;
}

/**
 * `lending-api deliver`: a process that delivers webhooks and serves no API,
 * so that API nodes (`serve --deliver off`) and delivery workers scale
 * apart. It runs what a `serve` node runs for delivery — the deliverer and
 * the publisher's sweep (events written by the CLI or an import are
 * published by whichever process sweeps first) — and the metrics listener.
 * It hears of the API nodes' publications by LISTEN (PublicationListener),
 * and of everything else — and of those too where LISTEN does not pass — by
 * its poll (WEBHOOK_POLL_INTERVAL_MS).
 */
export async function startDeliveryWorker(config: Config, logDestination?: DestinationStream): Promise<RunningDeliveryWorker> {
  const store = await openStore(config.store, serverStoreOptions(config));
  const logger = createLogger(config.logLevel, logDestination);
  let metricsServer: MetricsServer | undefined;
  try {
    if (store.kind === 'pglite') await migrate(store);
    else {
      const pending = await pendingMigrations(store);
      if (pending.length > 0) throw new Error(`the database schema is behind (${pending.length} migration(s) pending); run 'lending-api migrate' first`);
    }
    const webhookKey = await loadWebhookKey(config.store, config.webhookSecretKey);
    if (webhookKey.box === undefined) throw new Error('deliver needs WEBHOOK_SECRET_KEY (the key every node seals the endpoints’ signing secrets with): set it as on the API nodes');
    const metrics = new Registry();
    collectProcessMetrics(metrics);
    if (config.metricsPort !== undefined) metricsServer = await startMetricsServer(metrics, config.metricsPort, config.metricsHost);
    const deliverer = nodeDeliverer(store, deliverySettings(config, webhookKey.box), metrics, logger, renderDeliveredEvent)!;
    const publisher = new EventPublisher(store, { ...DEFAULT_EVENT_PUBLISHER, log: logger, onPublished: (orgId) => deliverer.wake(orgId) });
    // API-only nodes name each organization they publish for (NOTIFY): its deliveries start at once, not at the next poll.
    const listener =
      store instanceof PostgresStore
        ? new PublicationListener(store, { onPublished: (orgId) => deliverer.wake(orgId), onResumed: () => deliverer.wake(), log: logger })
        : undefined;
    publisher.start();
    deliverer.start();
    listener?.start();
    let closing: Promise<void> | undefined;
    return {
      store,
      metricsUrl: metricsServer?.url,
      close: () =>
        (closing ??= (async () => {
          await Promise.all([publisher.stop(), deliverer.stop(), listener?.stop()]);
          await metricsServer?.close();
          await store.close();
        })()),
    };
  } catch (error) {
    await metricsServer?.close();
    await store.close();
    throw error;
  }
}
