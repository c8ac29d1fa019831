import { ApiError } from '../domain/errors.js';
import type { Queryable } from '../store/store.js';

/** What a resend queued: the event and the endpoints that get it again (202, docs/webhooks.md). */
export interface EventResend {
  readonly object: 'event_resend';
  readonly event: string;
  /** The endpoints a new delivery was queued for, by id; empty when no enabled endpoint wants the event. */
  readonly endpoints: string[];
}

/**
 * One statement: the event, the endpoints chosen (the one named, or every
 * enabled endpoint whose enabled_events take the event's type, as the
 * publisher chooses them), and one new pending delivery per endpoint, due
 * now. A disabled endpoint named explicitly gets nothing (the caller
 * refuses it). $1 organization, $2 event uid, $3 endpoint uid or NULL.
 */
const RESEND_SQL = `WITH event AS (
    SELECT id, type FROM events WHERE org_id = $1 AND uid = $2
  ), chosen AS (
    SELECT w.id, w.uid, w.disabled FROM webhook_endpoints w CROSS JOIN event e
     WHERE w.org_id = $1
       AND CASE WHEN $3::text IS NULL THEN NOT w.disabled AND events_type_matches(e.type, w.enabled_events) ELSE w.uid = $3::text END
  ), queued AS (
    INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, next_attempt_at, created_at, updated_at)
    SELECT $1, c.id, e.id, now(), now(), now() FROM chosen c CROSS JOIN event e WHERE NOT c.disabled
    RETURNING endpoint_id
  )
  SELECT EXISTS (SELECT 1 FROM event) AS found, c.uid, c.disabled
    FROM (SELECT 1) one LEFT JOIN chosen c ON true ORDER BY c.id`;

/**
 * Queues the event for delivery again, now (POST /api/events/{id}/resend/).
 * Not idempotent: each call queues new deliveries. An unknown event or
 * endpoint (another organization's included) is a 404; a disabled endpoint
 * named explicitly is a 422, and nothing is queued.
 */
export async function resendEvent(db: Queryable, orgId: string, eventUid: string, endpointUid: string | undefined): Promise<EventResend> {
  const notFound = (what: string, uid: string) => new ApiError('not_found', `no ${what} with id '${uid.slice(0, 80)}'`);
  if (eventUid.includes('\u0000')) throw notFound('event', eventUid);
  const rows = await db.query<{ found: boolean; uid: string | null; disabled: boolean | null }>(RESEND_SQL, [orgId, eventUid, endpointUid ?? null]);
  if (rows[0]?.found !== true) throw notFound('event', eventUid);
  const endpoints = rows.flatMap((row) => (row.uid === null ? [] : [row]));
  if (endpointUid !== undefined) {
    const [named] = endpoints;
    if (!named) throw notFound('webhook endpoint', endpointUid);
    if (named.disabled) {
      throw ApiError.invalidBody([{ param: 'endpoint', detail: `the webhook endpoint '${endpointUid.slice(0, 80)}' is disabled: enable it first (POST it with "disabled": false)` }]);
    }
  }
  return { object: 'event_resend', event: eventUid, endpoints: endpoints.map((row) => row.uid ?? '') };
}
