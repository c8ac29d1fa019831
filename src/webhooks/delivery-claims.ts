import type { Queryable, Store } from '../store/store.js';
import type { SealedEndpointSecrets } from './endpoint-secrets.js';

/** An endpoint's signing secrets as a claim returns them (sealed under WEBHOOK_SECRET_KEY). */
export interface EndpointSecretsRow extends SealedEndpointSecrets {
  /** RFC 3339 UTC, or null. */
  readonly previous_secret_expires_at: string | null;
}

/**
 * An event as the log holds it, timestamps as RFC 3339 UTC text with
 * microseconds, the stored columns as their JSON text: rendering parses
 * them once (jsonb parsed by the driver would be written back to text first).
 */
export interface EventRow {
  readonly uid: string;
  readonly type: string;
  readonly object_uid: string;
  readonly data_object: string;
  readonly previous_attributes: string | null;
  readonly request_id: string | null;
  readonly idempotency_key: string | null;
  readonly import_id: string | null;
  readonly created_at: string;
}

/** A delivery this node has claimed: its next attempt is this node's until `claimMs` have passed. */
export interface ClaimedDelivery {
  readonly orgId: string;
  readonly deliveryId: string;
  readonly endpointId: string;
  /**
   * The event's row (its key in the log; the recording finds the delivery
   * by both, and by `event.created_at`, the delivery's partition key).
   */
  readonly eventId: string;
  /** The number of this attempt (1 = the first). */
  readonly attempt: number;
  readonly url: string;
  readonly endpoint: EndpointSecretsRow;
  readonly event: EventRow;
  /**
   * When the event entered the log (publication, right after its change
   * committed), or, for a resend, when the resend queued it: in ms since the
   * epoch, where the delivery's lag starts.
   */
  readonly eventPublishedAtMs: number;
}

export interface ClaimLimits {
  readonly nodeId: string;
  /** How long the claim holds: an attempt cut short by the node's death is free again after it. */
  readonly claimMs: number;
  /** The most claims to take in this statement. */
  readonly max: number;
  /** The most unexpired claims an endpoint may have, over every node (this node's window for it). */
  readonly perEndpoint: (endpointId: string) => number;
}

const UTC_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * Organizations with a due, unclaimed delivery to an enabled endpoint (the
 * only ones a claim takes): the one statement across organizations. $1 the
 * most to return, $2 the organization id after which to start (-1: from
 * the first), in id order: with more organizations at once than $1, the
 * next question starts where this one stopped, so none waits for ever.
 * Driven by the endpoints (16 at most per organization), one
 * index probe each for its earliest due delivery (ORDER BY and LIMIT 1 in a
 * LATERAL: the index's order, so never a join, nor a sequential scan that
 * would read the whole table for an endpoint with nothing due). Read from
 * the deliveries, a backlog of a million pending to a black-holed endpoint
 * made every node's every round read them all (0.9 s), and every other
 * organization's deliveries waited behind it.
 */
export const ORGANIZATIONS_WITH_DUE_WORK = `SELECT DISTINCT w.org_id FROM webhook_endpoints w
  CROSS JOIN LATERAL (SELECT 1 FROM webhook_deliveries d
     WHERE d.org_id = w.org_id AND d.endpoint_id = w.id AND d.state = 'pending' AND d.next_attempt_at <= now()
       AND (d.claimed_until IS NULL OR d.claimed_until <= now()) ORDER BY d.next_attempt_at LIMIT 1) due
  WHERE NOT w.disabled AND w.org_id > $2 ORDER BY w.org_id LIMIT $1`;

/**
 * The organization's enabled endpoints that no other node is claiming for
 * right now, locked for the rest of the claim transaction: the claims of one
 * endpoint are taken one node at a time, and the statement that chooses what
 * to claim (a fresh snapshot) counts every claim committed before, so an
 * endpoint never has more than `perEndpoint` attempts in flight over all
 * nodes. With what signs and addresses their deliveries: once per endpoint,
 * not once per delivery.
 */
const LOCK_ENDPOINTS = `SELECT id::text AS id, url, secret_ciphertext, previous_secret_ciphertext, earlier_secrets,
       to_char(previous_secret_expires_at AT TIME ZONE 'UTC', ${UTC_TEXT}) AS previous_secret_expires_at
  FROM webhook_endpoints WHERE org_id = $1 AND NOT disabled ORDER BY id FOR NO KEY UPDATE SKIP LOCKED`;

/**
 * The earliest due deliveries of the locked endpoints, each endpoint up to
 * its room (its window less its unexpired claims), at most $3 in all. $1
 * org, $2 endpoint ids, $3 max, $4 the endpoints' windows (in the order of
 * $2). Read, not locked: CLAIM takes only those still due and unclaimed
 * when it writes them (other nodes' claims of these endpoints wait for the
 * endpoints' locks). Apart from CLAIM so that CLAIM names the deliveries'
 * and events' partitions in its parameters: planned with them, it reads one
 * day's partitions, where a statement that found the deliveries itself was
 * planned over every day's (1.5 ms a claim with four days, more with each
 * day kept) or, planned once, joined them by a scan of a whole partition.
 */
const DUE = `SELECT f.id::text AS id, to_char(f.event_created_at AT TIME ZONE 'UTC', ${UTC_TEXT}) AS event_created_at
    FROM unnest($2::bigint[], $4::int[]) AS r(endpoint_id, size) CROSS JOIN LATERAL (
      SELECT d.id, d.event_created_at, d.next_attempt_at FROM webhook_deliveries d
       WHERE d.org_id = $1 AND d.endpoint_id = r.endpoint_id AND d.state = 'pending' AND d.next_attempt_at <= now()
         AND (d.claimed_until IS NULL OR d.claimed_until <= now())
       ORDER BY d.next_attempt_at, d.id
       LIMIT least($3, greatest(r.size - (SELECT count(*) FROM webhook_deliveries b
                                          WHERE b.org_id = $1 AND b.endpoint_id = r.endpoint_id AND b.state = 'pending' AND b.claimed_until > now()), 0))) f
   ORDER BY f.next_attempt_at, f.id LIMIT $3`;

/**
 * Claims the deliveries DUE chose that are still due and unclaimed (another
 * writer may have decided one since: it is left out), with their events.
 * $1 org, $2 delivery ids, $3 their events' created_at (the partition key,
 * in the order of $2), $4 and $5 the least and greatest of $3 (a range the
 * planner prunes partitions by: an array it does not), $6 claim ms, $7 node
 * id. Still pending is written as in src/webhooks/delivery-record.ts
 * (PENDING_BY_KEY): every index it can use is a probe by key. Rendered
 * outside the UPDATE: on Citus its RETURNING may hold no function but an
 * immutable one.
 */
const CLAIM = `WITH claimed AS (
    UPDATE webhook_deliveries d
       SET claimed_until = now() + $6::int * interval '1 millisecond', claimed_by = $7, updated_at = now()
      FROM events e
     WHERE d.org_id = $1 AND d.id = ANY ($2::bigint[]) AND d.event_created_at = ANY ($3::timestamptz[])
       AND d.event_created_at BETWEEN $4::timestamptz AND $5::timestamptz
       AND d.state <> ALL ('{delivered,failed,cancelled}'::text[]) AND d.next_attempt_at <= now()
       AND (d.claimed_until IS NULL OR d.claimed_until <= now())
       AND e.org_id = $1 AND e.id = d.event_id AND e.created_at = d.event_created_at AND e.created_at BETWEEN $4::timestamptz AND $5::timestamptz
    RETURNING d.id, d.endpoint_id, d.event_id, d.attempts, d.created_at AS queued_at, d.next_attempt_at,
              e.uid, e.type, e.object_uid, e.data_object, e.previous_attributes, e.request_id, e.idempotency_key, e.import_id, e.created_at
  )
  SELECT id::text AS delivery_id, endpoint_id::text AS endpoint_id, event_id::text AS event_id, attempts + 1 AS attempt,
         uid, type, object_uid, data_object::text AS data_object, previous_attributes::text AS previous_attributes, request_id, idempotency_key, import_id,
         to_char(created_at AT TIME ZONE 'UTC', ${UTC_TEXT}) AS created_at,
         (extract(epoch FROM greatest(created_at, queued_at)) * 1000)::float8 AS published_at_ms
    FROM claimed ORDER BY next_attempt_at, id`;

/**
 * DUE runs on a plan made once per connection: PostgreSQL would plan it
 * afresh at every claim (its generic plan's estimate, made without the
 * limits, never beats the custom plans'), 0.6 ms with four days'
 * partitions, more with each day kept. Its only sane plan is the one it
 * gets: an index probe per partition and endpoint, in the index's order.
 * Not on Citus, which cannot distribute DUE's or CLAIM's generic plan
 * ("could not create distributed plan"); its workers plan the shard's
 * statement themselves.
 */
const GENERIC_PLAN = `SELECT set_config('plan_cache_mode', CASE WHEN EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')
    THEN current_setting('plan_cache_mode') ELSE 'force_generic_plan' END, true)`;

type ClaimRow = EventRow & { delivery_id: string; endpoint_id: string; event_id: string; attempt: number; published_at_ms: number | string };
type LockedEndpoint = EndpointSecretsRow & { id: string; url: string };

/** The organizations with due work after `after` (see ORGANIZATIONS_WITH_DUE_WORK), at most `limit`, in id order. */
export async function organizationsWithDueDeliveries(db: Queryable, limit = 1000, after?: string): Promise<string[]> {
  const rows = await db.query<{ org_id: string | number }>(ORGANIZATIONS_WITH_DUE_WORK, [limit, after ?? '-1']);
  return rows.map((row) => String(row.org_id));
}

/**
 * Claims up to `limits.max` due deliveries of the organization (one short
 * transaction; nothing held after it): BEGIN with the endpoints' lock,
 * the plan setting, the choice (DUE), the claim with COMMIT.
 */
export async function claimDueDeliveries(store: Store, orgId: string, limits: ClaimLimits): Promise<ClaimedDelivery[]> {
  if (limits.max <= 0) return [];
  const { endpoints, rows } = await store.transaction(async (tx) => {
    const locked = await tx.query<LockedEndpoint>(LOCK_ENDPOINTS, [orgId], { prepare: true, sendWithBegin: true });
    if (locked.length === 0) return { endpoints: locked, rows: [] };
    const ids = locked.map((endpoint) => endpoint.id);
    await tx.exec(GENERIC_PLAN);
    const due = await tx.query<{ id: string; event_created_at: string }>(DUE, [orgId, ids, limits.max, ids.map((id) => limits.perEndpoint(id))], { prepare: true });
    if (due.length === 0) return { endpoints: locked, rows: [] };
    // RFC 3339 UTC with microseconds, all in one format: their order as text is their order in time.
    const times = due.map((delivery) => delivery.event_created_at);
    const params = [orgId, due.map((delivery) => delivery.id), times, least(times), greatest(times), limits.claimMs, limits.nodeId];
    const [claimed] = await tx.commitWith([{ sql: CLAIM, params }]);
    return { endpoints: locked, rows: claimed as ClaimRow[] };
  });
  const byId = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
  return rows.map((row) => {
    const endpoint = byId.get(row.endpoint_id)!;
    return {
      orgId,
      deliveryId: row.delivery_id,
      endpointId: row.endpoint_id,
      eventId: row.event_id,
      attempt: Number(row.attempt),
      url: endpoint.url,
      endpoint,
      event: {
        uid: row.uid,
        type: row.type,
        object_uid: row.object_uid,
        data_object: row.data_object,
        previous_attributes: row.previous_attributes,
        request_id: row.request_id,
        idempotency_key: row.idempotency_key,
        import_id: row.import_id,
        created_at: row.created_at,
      },
      eventPublishedAtMs: Number(row.published_at_ms),
    };
  });
}

/** The least of RFC 3339 UTC texts of one format (their order as text is their order in time). */
export function least(times: readonly string[]): string {
  return times.reduce((least, at) => (at < least ? at : least));
}

/** The greatest of RFC 3339 UTC texts of one format. */
export function greatest(times: readonly string[]): string {
  return times.reduce((greatest, at) => (at > greatest ? at : greatest));
}
