import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { WebhookDeliverySettings } from '../domain/webhook-delivery-setting.js';
import { registerWebhookMetrics } from '../metrics/webhook-metrics.js';
import type { Store } from '../store/store.js';
import { Deliverer } from './deliverer.js';
import type { EventRow } from './delivery-claims.js';
import { signingSecretsStandIn } from './event-body-stand-in.js';
import { SecretBox } from './secret-box.js';

/**
 * The deliverer a `serve` node runs, with its metrics; undefined (and said
 * once) when no WEBHOOK_SECRET_KEY opens the endpoints' secrets. A node on a
 * hot standby runs it too: its claims fail read-only, quietly.
 */
export function nodeDeliverer(
  store: Store,
  settings: WebhookDeliverySettings,
  inMemoryStore: boolean,
  metrics: Registry,
  log: FastifyBaseLogger,
  /** The event as GET /api/events/{id}/ renders it (src/events/event-body.ts: events/ sits above webhooks/). */
  renderEvent: (event: EventRow) => Record<string, unknown>,
): Deliverer | undefined {
  // pglite://memory: nothing sealed outlives the process, so a key of its own will do.
  const key = settings.secretKey ?? (inMemoryStore ? randomBytes(32) : undefined);
  if (key === undefined) {
    log.info('webhooks are not delivered by this node: WEBHOOK_SECRET_KEY is not set');
    return undefined;
  }
  const box = SecretBox.fromKey(key);
  const node: { deliverer?: Deliverer } = {};
  const observer = registerWebhookMetrics(metrics, store, () => node.deliverer?.inFlight ?? 0);
  node.deliverer = new Deliverer(store, {
    nodeId: `${hostname()}/${process.pid}/${randomBytes(3).toString('hex')}`,
    policy: { allowPrivate: settings.allowPrivate, allowHosts: settings.allowHosts },
    claimMs: settings.claimMs,
    secretsOf: (row) => signingSecretsStandIn(box, row, new Date()),
    renderEvent,
    observer,
    log,
  });
  return node.deliverer;
}
