import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from './config.js';
import { registerWebhookMetrics } from './metrics/webhook-metrics.js';
import type { Store } from './store/store.js';
import { Deliverer } from './webhooks/deliverer.js';
import type { EventRow } from './webhooks/delivery-claims.js';
import type { DestinationPolicy } from './webhooks/destination.js';
import { signingSecretsOf } from './webhooks/endpoint-secrets.js';
import type { SecretBox } from './webhooks/secret-box.js';

export interface NodeDelivererSettings {
  /** The process's WEBHOOK_SECRET_KEY (src/webhooks/webhook-key.ts); undefined: no endpoint's secret can be opened here. */
  readonly box: SecretBox | undefined;
  readonly destinations: DestinationPolicy;
  readonly claimMs: number;
  /** How often it asks the database for due deliveries it was not told of. */
  readonly pollIntervalMs?: number;
}

/**
 * The deliverer a `serve` node or a `deliver` process runs, with its
 * metrics; undefined (and said once) when no WEBHOOK_SECRET_KEY opens the
 * endpoints' secrets. A node on a hot standby runs it too: its claims fail
 * read-only, quietly.
 */
export function nodeDeliverer(
  store: Store,
  settings: NodeDelivererSettings,
  metrics: Registry,
  log: FastifyBaseLogger,
  /** The event as GET /api/events/{id}/ renders it (src/events/event-body.ts: events/ sits above webhooks/). */
  renderEvent: (event: EventRow) => Record<string, unknown>,
): Deliverer | undefined {
  const box = settings.box;
  if (box === undefined) {
    log.info('webhooks are not delivered by this node: WEBHOOK_SECRET_KEY is not set');
    return undefined;
  }
  const node: { deliverer?: Deliverer } = {};
  const observer = registerWebhookMetrics(metrics, store, () => node.deliverer?.inFlight ?? 0);
  node.deliverer = new Deliverer(store, {
    nodeId: `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`,
    policy: settings.destinations,
    claimMs: settings.claimMs,
    ...(settings.pollIntervalMs === undefined ? {} : { pollIntervalMs: settings.pollIntervalMs }),
    secretsOf: (row) => signingSecretsOf(box, row, new Date()),
    renderEvent,
    observer,
    log,
  });
  return node.deliverer;
}

/** What a process's configuration says of its deliverer. */
export function deliverySettings(config: Config, box: SecretBox | undefined): NodeDelivererSettings {
  return { box, destinations: config.webhookDestinations, claimMs: config.webhookClaimMs, pollIntervalMs: config.webhookPollIntervalMs };
}
