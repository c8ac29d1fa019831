import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Queryable } from '../store/store.js';
import type { AttemptResult } from '../webhooks/attempt.js';
import type { ClaimedDelivery } from '../webhooks/delivery-claims.js';
import type { DeliveryObserver } from '../webhooks/deliverer-settings.js';

/** The backlog, over every organization: one index scan of the pending deliveries. */
const BACKLOG_SQL = `SELECT count(*)::int AS pending,
       coalesce(extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now())), 0)::float8 AS oldest_due_seconds
  FROM webhook_deliveries WHERE state = 'pending'`;

/** A scrape reuses the backlog read this recently; the read waits no longer than this for the database. */
const BACKLOG_CACHE_MS = 5000;
const BACKLOG_WAIT_MS = 2000;

interface Backlog {
  readonly pending: number;
  readonly oldestDueSeconds: number;
}

/** `delivered`, or why the attempt failed (attempt.ts AttemptFailure; `unsigned` when the secret could not be opened). */
export function attemptOutcome(result: AttemptResult): string {
  if (result.ok) return 'delivered';
  return result.failure ?? 'unsigned';
}

/**
 * Webhook delivery on this node: attempts by outcome, the lag from an
 * event's publication (its created_at: the log stamps it when the publisher
 * moves it in, right after the change commits) to the receiver's 2xx, the
 * attempts in flight; and, read from the database at scrape (at most every
 * 5 s), the pending deliveries and how long the most overdue one has waited
 * past its due time (a backlog the nodes do not keep up with).
 */
export function registerWebhookMetrics(registry: Registry, db: Queryable, inFlight: () => number): DeliveryObserver {
  const attempts = new Counter({
    name: 'lending_api_webhook_attempts_total',
    help: 'Webhook delivery attempts made by this node, by outcome: delivered, http_status, timeout, network, tls, redirect, refused_address, invalid_url, unsigned',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const lag = new Histogram({
    name: 'lending_api_webhook_delivery_lag_seconds',
    help: "From an event's publication (its created_at, right after the change committed) to the receiver's 2xx, for each delivered event",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21_600, 86_400, 259_200],
    registers: [registry],
  });
  new Gauge({
    name: 'lending_api_webhook_attempts_in_flight',
    help: 'Webhook attempts this node has sent and not yet finished',
    registers: [registry],
    collect() {
      this.set(inFlight());
    },
  });
  let cached: { at: number; value: Promise<Backlog | undefined> } | undefined;
  const backlog = () => {
    if (!cached || Date.now() - cached.at > BACKLOG_CACHE_MS) cached = { at: Date.now(), value: readBacklog(db) };
    return cached.value;
  };
  new Gauge({
    name: 'lending_api_webhook_deliveries_pending',
    help: 'Webhook deliveries not yet delivered, given up or cancelled, over every organization (absent while the database does not answer)',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const read = await backlog();
      if (read) this.set(read.pending);
      else this.reset();
    },
  });
  new Gauge({
    name: 'lending_api_webhook_oldest_due_delivery_seconds',
    help: 'How long the most overdue pending webhook delivery has waited past its due time (0 when none is due); a growing value: deliveries are not keeping up',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const read = await backlog();
      if (read) this.set(read.oldestDueSeconds);
      else this.reset();
    },
  });
  return {
    attempted(result: AttemptResult, claim: ClaimedDelivery, answeredAtMs: number) {
      attempts.inc({ outcome: attemptOutcome(result) });
      if (result.ok) lag.observe(Math.max(0, (answeredAtMs - claim.eventPublishedAtMs) / 1000));
    },
  };
}

async function readBacklog(db: Queryable): Promise<Backlog | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), BACKLOG_WAIT_MS)));
  const read = db
    .query<{ pending: number; oldest_due_seconds: number | string }>(BACKLOG_SQL)
    .then(([row]) => ({ pending: Number(row?.pending ?? 0), oldestDueSeconds: Number(row?.oldest_due_seconds ?? 0) }))
    .catch(() => undefined);
  return Promise.race([read, timeout]).finally(() => clearTimeout(timer));
}
