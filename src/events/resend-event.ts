import { ApiError } from '../domain/errors.js';
import type { Store, TransactionOptions } from '../store/store.js';
import { lockEventStream } from '../webhooks/webhook-endpoints.js';

/** What a resend queued: the event and the endpoints that get it again (202, docs/webhooks.md). */
export interface EventResend {
  readonly object: 'event_resend';
  readonly event: string;
  /** The endpoints the event is sent to now, by id; empty when no enabled endpoint wants the event. */
  readonly endpoints: string[];
}

/**
 * The event, the endpoints chosen (the one named, or every enabled endpoint
 * whose enabled_events take the event's type, as the publisher chooses
 * them), and for each the delivery of the event already waiting for it, if
 * any. $1 organization, $2 event uid, $3 endpoint uid or NULL. No row: no
 * such event; one row with a null endpoint: no endpoint chosen.
 */
const CHOSEN_SQL = `SELECT e.id::text AS event_id, to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS event_created_at, w.id::text AS endpoint_id, w.uid, w.disabled,
         (SELECT min(d.id) FROM webhook_deliveries d
           WHERE d.org_id = $1 AND d.event_id = e.id AND d.event_created_at = e.created_at AND d.endpoint_id = w.id AND d.state = 'pending')::text AS waiting
    FROM events e
    LEFT JOIN webhook_endpoints w ON w.org_id = $1
     AND CASE WHEN $3::text IS NULL THEN NOT w.disabled AND events_type_matches(e.type, w.enabled_events) ELSE w.uid = $3::text END
   WHERE e.org_id = $1 AND e.uid = $2
   ORDER BY w.id`;

/** A new pending delivery, due now, per endpoint. $1 org, $2 event id, $3 endpoint ids, $4 the event's created_at. */
const QUEUE_SQL = `INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_created_at, next_attempt_at, created_at, updated_at)
  SELECT $1, endpoint_id, $2, $4::timestamptz, now(), now(), now() FROM unnest($3::bigint[]) AS endpoint_id`;

/**
 * The waiting deliveries' next attempt brought forward to now, unless an
 * attempt of theirs is in flight (a node holds the claim: that attempt is
 * the resend). $1 org, $2 event id, $3 delivery ids, $4 the event's created_at.
 */
const HURRY_SQL = `UPDATE webhook_deliveries d SET next_attempt_at = now(), updated_at = now()
   WHERE d.org_id = $1 AND d.event_id = $2 AND d.event_created_at = $4::timestamptz AND d.id = ANY ($3::bigint[]) AND d.state = 'pending'
     AND d.next_attempt_at > now() AND (d.claimed_until IS NULL OR d.claimed_until <= now())`;

interface ChosenRow {
  readonly event_id: string;
  /** RFC 3339 UTC with microseconds: the delivery's partition key, exactly. */
  readonly event_created_at: string;
  readonly endpoint_id: string | null;
  readonly uid: string | null;
  readonly disabled: boolean | null;
  readonly waiting: string | null;
}

/**
 * Sends the event again, now (POST /api/events/{id}/resend/): a new pending
 * delivery per endpoint chosen, or, where the event already waits for the
 * endpoint (a retry is scheduled, or a resend not yet made), that delivery's
 * next attempt brought forward to now and nothing added: however often an
 * event is resent, an endpoint has at most one delivery of it waiting. One
 * transaction holding the organization's event stream lock, so concurrent
 * resends fold too. An unknown event or endpoint (another organization's
 * included) is a 404; a disabled endpoint named explicitly is a 422, and
 * nothing is queued.
 */
export async function resendEvent(
  store: Store,
  orgId: string,
  eventUid: string,
  endpointUid: string | undefined,
  options?: TransactionOptions,
): Promise<EventResend> {
  const notFound = (what: string, uid: string) => new ApiError('not_found', `no ${what} with id '${uid.slice(0, 80)}'`);
  if (eventUid.includes('\u0000')) throw notFound('event', eventUid);
  const endpoints = await store.transaction(async (tx) => {
    await lockEventStream(tx, orgId);
    const rows = await tx.query<ChosenRow>(CHOSEN_SQL, [orgId, eventUid, endpointUid ?? null]);
    const [first] = rows;
    if (!first) throw notFound('event', eventUid);
    const chosen = rows.filter((row) => row.endpoint_id !== null);
    if (endpointUid !== undefined) {
      const [named] = chosen;
      if (!named) throw notFound('webhook endpoint', endpointUid);
      if (named.disabled) {
        throw ApiError.invalidBody([{ param: 'endpoint', detail: `the webhook endpoint '${endpointUid.slice(0, 80)}' is disabled: enable it first (POST it with "disabled": false)` }]);
      }
    }
    const fresh = chosen.filter((row) => row.waiting === null).map((row) => row.endpoint_id);
    const waiting = chosen.flatMap((row) => (row.waiting === null ? [] : [row.waiting]));
    if (fresh.length > 0) await tx.query(QUEUE_SQL, [orgId, first.event_id, fresh, first.event_created_at]);
    if (waiting.length > 0) await tx.query(HURRY_SQL, [orgId, first.event_id, waiting, first.event_created_at]);
    return chosen.map((row) => row.uid ?? '');
  }, options);
  return { object: 'event_resend', event: eventUid, endpoints };
}
