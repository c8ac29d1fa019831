import type { Store } from '../store/store.js';
import { greatest, least } from './delivery-claims.js';
import { nextAttemptDelayMs } from './retry-schedule.js';

/** The most waiting deliveries one timeout decides: the rest wait for the next (each decided within a deadline or two). */
export const SHARED_FATE_BATCH = 1000;

/**
 * The endpoint's deliveries due now and claimed by no node, locked ($1 org,
 * $2 endpoint, $3 most). SKIP LOCKED: one another node is claiming or
 * deciding is its.
 */
const DUE_BEHIND = `SELECT d.id::text AS id, d.event_id::text AS event_id, d.attempts,
         to_char(d.event_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS event_created_at
    FROM webhook_deliveries d JOIN webhook_endpoints w ON w.org_id = $1 AND w.id = d.endpoint_id AND NOT w.disabled
   WHERE d.org_id = $1 AND d.endpoint_id = $2 AND d.state = 'pending' AND d.next_attempt_at <= now()
     AND (d.claimed_until IS NULL OR d.claimed_until <= now())
   ORDER BY d.next_attempt_at, d.id LIMIT $3 FOR UPDATE OF d SKIP LOCKED`;

/**
 * Each of them failed as the timed-out attempt did, without being sent: one
 * attempt more, its next at the schedule's time for that attempt (computed
 * here: Citus takes no volatile function in an UPDATE of a sharded table), or
 * given up after the last; and the attempt row, which says it was not sent.
 * $1 org, $2 endpoint, $3 deliveries, $4 events, $5 attempt numbers, $6 next
 * attempts (null: given up), $7 error, $8 the events' created_at (the
 * partition key of the deliveries and the events), $9 and $10 the least and
 * greatest of $8 (a range the planner prunes partitions by: an array it
 * does not). The deliveries by their keys, still pending written as in
 * src/webhooks/delivery-record.ts (PENDING_BY_KEY).
 */
const FAIL_UNSENT = `WITH decided AS (
    SELECT * FROM unnest($3::bigint[], $4::bigint[], $5::int[], $6::timestamptz[], $8::timestamptz[]) AS f(delivery_id, event_id, attempt, next_attempt_at, event_created_at)
  ), failed AS (
    UPDATE webhook_deliveries d
       SET attempts = f.attempt, state = CASE WHEN f.next_attempt_at IS NULL THEN 'failed' ELSE 'pending' END,
           next_attempt_at = coalesce(f.next_attempt_at, d.next_attempt_at), updated_at = now()
      FROM decided f
     WHERE d.org_id = $1 AND d.id = f.delivery_id AND d.event_id = f.event_id AND d.event_created_at = f.event_created_at
       AND d.event_created_at BETWEEN $9::timestamptz AND $10::timestamptz AND d.state <> ALL ('{delivered,failed,cancelled}'::text[])
    RETURNING d.id, d.event_id, d.event_created_at, d.attempts, f.next_attempt_at
  )
  INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, error, response_body, next_attempt_at, created_at)
  SELECT $1, $2, f.id, e.uid, f.attempts, NULL, 0, $7, NULL, f.next_attempt_at, now()
    FROM failed f JOIN events e ON e.org_id = $1 AND e.id = f.event_id AND e.created_at = f.event_created_at
   WHERE e.created_at BETWEEN $9::timestamptz AND $10::timestamptz`;

export interface TimedOutAttempt {
  readonly orgId: string;
  readonly endpointId: string;
  /** The event whose attempt timed out, named in the others' error. */
  readonly eventUid: string;
  readonly deadlineMs: number;
}

/**
 * An attempt to the endpoint just timed out: the deliveries that came due
 * meanwhile share its fate now instead of each waiting for a socket of the
 * endpoint's window — down to one behind a black hole, so each of them would
 * wait a whole deadline behind the one before and every retry fall further
 * behind its schedule (the overdue gauge rose from 13 s to 199 s in 8
 * minutes). Each is recorded as a failed attempt that was not sent and
 * retried on its own schedule, at most a deadline late. An endpoint that
 * answers again gets them at their next attempts. How many were decided.
 */
export async function failDueBehindTimeout(store: Store, timedOut: TimedOutAttempt, random: () => number = Math.random): Promise<number> {
  return store.transaction(async (tx) => {
    const due = await tx.query<{ id: string; event_id: string; attempts: number; event_created_at: string }>(DUE_BEHIND, [timedOut.orgId, timedOut.endpointId, SHARED_FATE_BATCH]);
    if (due.length === 0) return 0;
    const now = Date.now();
    const attempts = due.map((delivery) => Number(delivery.attempts) + 1);
    const next = attempts.map((attempt) => {
      const delay = nextAttemptDelayMs(attempt, random);
      return delay === null ? null : new Date(now + delay).toISOString();
    });
    const error = `not sent: an attempt of ${timedOut.eventUid} to this endpoint timed out after ${timedOut.deadlineMs} ms just before; this one failed with it`;
    const times = due.map((d) => d.event_created_at);
    await tx.query(FAIL_UNSENT, [timedOut.orgId, timedOut.endpointId, due.map((d) => d.id), due.map((d) => d.event_id), attempts, next, error, times, least(times), greatest(times)]);
    return due.length;
  });
}
