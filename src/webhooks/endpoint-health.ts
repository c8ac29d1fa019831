/**
 * An endpoint's delivery health, as every rendering of the endpoint carries it (SPEC §3c,
 * docs/webhooks.md "Health"). The portal and a person's dashboard read it; nothing in the
 * service acts on it (disabling reads failing_since itself).
 */
export interface EndpointHealth {
  /** Deliveries waiting for their next attempt (due now or later, retries included), in flight included. */
  readonly pending: number;
  readonly last_attempt_at: string | null;
  readonly last_success_at: string | null;
  /** The first failed attempt since the last success; null while the last attempt succeeded (or none was made). */
  readonly failing_since: string | null;
  /** Attempts in the last 24 hours (the 5-minute buckets that began in them), by outcome. */
  readonly succeeded_24h: number;
  readonly failed_24h: number;
  /** The same buckets by UTC hour: the current hour and the 23 before it, oldest first, zero-filled. */
  readonly hourly_24h: readonly HourOfAttempts[];
}

/** One hour of an endpoint's attempts: `hour` is its start (RFC 3339, UTC). */
export interface HourOfAttempts {
  readonly hour: string;
  readonly succeeded: number;
  readonly failed: number;
}

/** The 24 hours of `hourly_24h` at `now`, without an attempt: a new endpoint's. */
export function emptyHours(now: Date = new Date()): HourOfAttempts[] {
  const current = Math.floor(now.getTime() / 3_600_000) * 3_600_000;
  return Array.from({ length: 24 }, (_, index) => ({
    hour: new Date(current - (23 - index) * 3_600_000).toISOString().replace('.000Z', 'Z'),
    succeeded: 0,
    failed: 0,
  }));
}

/** The width of a bucket of webhook_endpoint_stats (migration 023), in seconds. */
export const HEALTH_BUCKET_SECONDS = 300;

const TIMESTAMP = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/** The current UTC hour (whatever the session's TimeZone) and the 23 before it. */
const FIRST_HOUR = `date_trunc('hour', now(), 'UTC') - interval '23 hours'`;

/**
 * The pending deliveries are counted in the order of their partial index
 * (webhook_deliveries_endpoint_due_idx), under a LIMIT no count reaches: so
 * the planner reads that index, an empty range for an endpoint with nothing
 * waiting, even when its statistics say the organization's whole table is
 * one endpoint's backlog (then it chose a sequential scan per endpoint:
 * 750 ms for a list of 16 endpoints behind 200,000 pending deliveries).
 */
const PENDING_PLAN_LIMIT = 2_147_483_647;

/**
 * The `health` column of the endpoint row `w` (any relation with its `id` and
 * `failing_since`), $1 being the organization: every subquery is constrained
 * by it (a router statement on Citus). Each is an index probe or a short
 * range: `pending` counts the endpoint's pending deliveries through their
 * partial index (index-only: a backlog costs about 0.25 µs a delivery), the rest read
 * webhook_endpoint_stats (at most 289 buckets for the 24-hour counts, and
 * 288 summed by hour into hourly_24h; the latest bucket, or the latest with
 * a success, for the times).
 */
export const HEALTH_COLUMN = `json_build_object(
    'pending', (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries d WHERE d.org_id = $1 AND d.endpoint_id = w.id AND d.state = 'pending'
                                       ORDER BY d.next_attempt_at LIMIT ${PENDING_PLAN_LIMIT}) waiting)::int,
    'last_attempt_at', (SELECT to_char(s.last_attempt_at AT TIME ZONE 'UTC', ${TIMESTAMP}) FROM webhook_endpoint_stats s
                         WHERE s.org_id = $1 AND s.endpoint_id = w.id ORDER BY s.bucket DESC LIMIT 1),
    'last_success_at', (SELECT to_char(s.last_success_at AT TIME ZONE 'UTC', ${TIMESTAMP}) FROM webhook_endpoint_stats s
                         WHERE s.org_id = $1 AND s.endpoint_id = w.id AND s.last_success_at IS NOT NULL ORDER BY s.bucket DESC LIMIT 1),
    'failing_since', to_char(w.failing_since AT TIME ZONE 'UTC', ${TIMESTAMP}),
    'succeeded_24h', (SELECT coalesce(sum(s.succeeded), 0) FROM webhook_endpoint_stats s
                       WHERE s.org_id = $1 AND s.endpoint_id = w.id AND s.bucket > now() - interval '24 hours')::int,
    'failed_24h', (SELECT coalesce(sum(s.failed), 0) FROM webhook_endpoint_stats s
                    WHERE s.org_id = $1 AND s.endpoint_id = w.id AND s.bucket > now() - interval '24 hours')::int,
    'hourly_24h', (SELECT json_agg(json_build_object('hour', to_char(h.hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                                     'succeeded', coalesce(b.succeeded, 0), 'failed', coalesce(b.failed, 0)) ORDER BY h.hour)
                     FROM generate_series(${FIRST_HOUR}, ${FIRST_HOUR} + interval '23 hours', interval '1 hour') AS h(hour)
                     LEFT JOIN (SELECT date_trunc('hour', s.bucket, 'UTC') AS hour, sum(s.succeeded)::int AS succeeded, sum(s.failed)::int AS failed
                                  FROM webhook_endpoint_stats s WHERE s.org_id = $1 AND s.endpoint_id = w.id AND s.bucket >= ${FIRST_HOUR}
                                 GROUP BY 1) b ON b.hour = h.hour)
  ) AS health`;

/**
 * Counts attempts in their endpoints' current buckets: one statement per
 * organization, its rows in endpoint order, run after every other statement
 * of the recording transaction, so two recordings that touch the same
 * endpoints lock their buckets in the same order (no deadlock) and hold them
 * only until their commit. An attempt to an endpoint deleted meanwhile is
 * not counted (nor is its attempt row kept). $1 org, $2 endpoint ids, $3
 * whether each attempt succeeded (1/0: a statement sent with its COMMIT
 * carries its arrays as literals, which hold numbers, not booleans). The
 * organization inserted is the endpoint row's w.org_id, not $1: on Citus
 * that makes it an INSERT … SELECT pushed down to the organization's shard
 * (one task); with $1 it was pulled through the coordinator, and could not
 * be EXPLAINed with its parameters.
 */
export const COUNT_ATTEMPTS = `INSERT INTO webhook_endpoint_stats AS s (org_id, endpoint_id, bucket, succeeded, failed, last_attempt_at, last_success_at)
  SELECT w.org_id, a.endpoint_id, to_timestamp(floor(extract(epoch FROM now()) / ${HEALTH_BUCKET_SECONDS}) * ${HEALTH_BUCKET_SECONDS}),
         (count(*) FILTER (WHERE a.ok = 1))::int, (count(*) FILTER (WHERE a.ok = 0))::int, now(), CASE WHEN max(a.ok) = 1 THEN now() END
    FROM unnest($2::bigint[], $3::int[]) AS a(endpoint_id, ok)
    JOIN webhook_endpoints w ON w.org_id = $1 AND w.id = a.endpoint_id
   GROUP BY w.org_id, a.endpoint_id ORDER BY a.endpoint_id
  ON CONFLICT (org_id, endpoint_id, bucket) DO UPDATE SET
    succeeded = s.succeeded + excluded.succeeded, failed = s.failed + excluded.failed,
    last_attempt_at = greatest(s.last_attempt_at, excluded.last_attempt_at), last_success_at = greatest(s.last_success_at, excluded.last_success_at)`;
