import type { Store } from '../store/store.js';
import { dropExpiredPartitions, ensureDayPartitions } from './event-partitions.js';

/** Rows one prune statement deletes at most: short transactions, short locks. */
export const EVENT_PRUNE_BATCH = 1000;

/**
 * Row pruning: what the dropping of day partitions leaves past the cutoff
 * (the default partition's rows, and a day kept for a pending delivery).
 * A batch of the organization's events older than the cutoff, oldest first,
 * with their deliveries; an event a delivery is still pending for is kept
 * until it is delivered, given up or cancelled. By keys that hold the
 * partition key. $1 org, $2 retention days, $3 batch.
 */
const PRUNE_EVENTS = `WITH old AS (
    SELECT e.id, e.created_at FROM events e
     WHERE e.org_id = $1 AND e.created_at < now() - $2::int * interval '1 day'
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                        WHERE d.org_id = $1 AND d.event_id = e.id AND d.event_created_at = e.created_at AND d.state = 'pending')
     ORDER BY e.created_at LIMIT $3
  ), deliveries AS (
    DELETE FROM webhook_deliveries d
     WHERE d.org_id = $1 AND d.event_created_at < now() - $2::int * interval '1 day' AND (d.event_id, d.event_created_at) IN (SELECT id, created_at FROM old)
    RETURNING d.id
  ), pruned AS (
    DELETE FROM events e
     WHERE e.org_id = $1 AND e.created_at < now() - $2::int * interval '1 day' AND (e.id, e.created_at) IN (SELECT id, created_at FROM old)
    RETURNING e.id
  )
  SELECT (SELECT count(*) FROM pruned)::int AS events, (SELECT count(*) FROM deliveries)::int AS deliveries`;

/** A batch of the organization's delivery attempts older than the cutoff. $1 org, $2 days, $3 batch. */
const PRUNE_ATTEMPTS = `WITH pruned AS (
    DELETE FROM webhook_attempts a WHERE a.org_id = $1 AND a.created_at < now() - $2::int * interval '1 day' AND (a.id, a.created_at) IN (
      SELECT id, created_at FROM webhook_attempts WHERE org_id = $1 AND created_at < now() - $2::int * interval '1 day' LIMIT $3)
    RETURNING a.id
  )
  SELECT count(*)::int AS attempts FROM pruned`;

/**
 * A batch of the organization's endpoint health buckets (webhook_endpoint_stats)
 * older than the cutoff, except each endpoint's newest bucket and its newest
 * bucket with a success: `last_attempt_at` and `last_success_at` are read from
 * those, and must outlive the retention. $1 org, $2 days, $3 batch.
 */
const PRUNE_HEALTH_BUCKETS = `WITH kept AS (
    SELECT endpoint_id, max(bucket) AS newest, max(bucket) FILTER (WHERE last_success_at IS NOT NULL) AS newest_success
      FROM webhook_endpoint_stats WHERE org_id = $1 GROUP BY endpoint_id
  ), old AS (
    SELECT s.endpoint_id, s.bucket FROM webhook_endpoint_stats s JOIN kept k ON k.endpoint_id = s.endpoint_id
     WHERE s.org_id = $1 AND s.bucket < now() - $2::int * interval '1 day'
       AND s.bucket <> k.newest AND s.bucket IS DISTINCT FROM k.newest_success
     LIMIT $3
  ), pruned AS (
    DELETE FROM webhook_endpoint_stats s WHERE s.org_id = $1 AND (s.endpoint_id, s.bucket) IN (SELECT endpoint_id, bucket FROM old)
    RETURNING s.bucket
  )
  SELECT count(*)::int AS buckets FROM pruned`;

export interface PruneCounts {
  /** Day partitions dropped (src/events/event-partitions.ts); the counts below are rows deleted one by one. */
  partitions: number;
  events: number;
  deliveries: number;
  attempts: number;
  /** Endpoint health buckets (5 minutes of one endpoint's attempt counts). */
  healthBuckets: number;
}

/** Deletes what the organization's log, delivery history and endpoint health hold beyond `retentionDays`, batch by batch. */
export async function pruneOrganizationEvents(store: Store, orgId: string, retentionDays: number, batch = EVENT_PRUNE_BATCH): Promise<PruneCounts> {
  const counts: PruneCounts = { partitions: 0, events: 0, deliveries: 0, attempts: 0, healthBuckets: 0 };
  for (;;) {
    const [row] = await store.query<{ events: number; deliveries: number }>(PRUNE_EVENTS, [orgId, retentionDays, batch]);
    counts.events += Number(row?.events ?? 0);
    counts.deliveries += Number(row?.deliveries ?? 0);
    if (Number(row?.events ?? 0) < batch) break;
  }
  for (;;) {
    const [row] = await store.query<{ attempts: number }>(PRUNE_ATTEMPTS, [orgId, retentionDays, batch]);
    counts.attempts += Number(row?.attempts ?? 0);
    if (Number(row?.attempts ?? 0) < batch) break;
  }
  for (;;) {
    const [row] = await store.query<{ buckets: number }>(PRUNE_HEALTH_BUCKETS, [orgId, retentionDays, batch]);
    counts.healthBuckets += Number(row?.buckets ?? 0);
    if (Number(row?.buckets ?? 0) < batch) break;
  }
  return counts;
}

/**
 * Makes the day partitions ahead, drops the expired ones, then prunes every
 * organization that has published events by rows, one after another.
 */
export async function pruneEvents(store: Store, retentionDays: number, batch = EVENT_PRUNE_BATCH, now = new Date()): Promise<PruneCounts> {
  await ensureDayPartitions(store, now);
  const partitions = await dropExpiredPartitions(store, retentionDays, now);
  const organizations = await store.query<{ org_id: string }>('SELECT org_id::text AS org_id FROM event_streams ORDER BY org_id');
  const total: PruneCounts = { partitions: partitions.dropped.length, events: 0, deliveries: 0, attempts: 0, healthBuckets: 0 };
  for (const { org_id: orgId } of organizations) {
    const counts = await pruneOrganizationEvents(store, orgId, retentionDays, batch);
    total.events += counts.events;
    total.deliveries += counts.deliveries;
    total.attempts += counts.attempts;
    total.healthBuckets += counts.healthBuckets;
  }
  return total;
}
