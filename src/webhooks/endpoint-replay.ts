import type { Store, TransactionOptions } from '../store/store.js';
import { lockEventStream } from './webhook-endpoints.js';

/** What a replay queued (202, docs/webhooks.md "Replaying failures"). */
export interface EndpointReplay {
  readonly object: 'webhook_endpoint_replay';
  readonly endpoint: string;
  /** The window, as applied (µs, UTC): `until` is the request's time when none was given. */
  readonly since: string;
  readonly until: string;
  /** Events queued for the endpoint again, each once. */
  readonly count: number;
  /** More events of the window are still to queue: the same request again queues the next ones. */
  readonly has_more: boolean;
}

/** The most events one replay queues: its transaction, and the organization's event stream lock, stay short. */
export const REPLAY_BATCH = 10_000;

/** The inclusive window of attempt times: RFC 3339 UTC with microseconds; `until` absent means now. */
export interface ReplayWindow {
  readonly since: string;
  readonly until?: string | undefined;
}

const TIMESTAMP = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/** $1 org, $2 endpoint uid, $3 until or null (now). */
const ENDPOINT_SQL = `SELECT id::text AS id, disabled,
    to_char(coalesce($3::timestamptz, now()) AT TIME ZONE 'UTC', ${TIMESTAMP}) AS until
  FROM webhook_endpoints WHERE org_id = $1 AND uid = $2`;

/**
 * The events to send again: for each event attempted to the endpoint in the
 * window, its last attempt there, when that failed; less the events that wait
 * for the endpoint now (a retry is scheduled, or an earlier replay or resend
 * is not yet made) and those delivered to it since. The window is a range of
 * the attempts' index (org_id, endpoint_id, created_at); each event is then
 * found by its key and its deliveries by theirs. Only the types the
 * endpoint takes now: one that no longer takes a type is not sent it again.
 * $1 org, $2 endpoint id, $3 since, $4 until, $5 at most this many.
 */
const FAILED_SQL = `SELECT e.id::text AS event_id, to_char(e.created_at AT TIME ZONE 'UTC', ${TIMESTAMP}) AS event_created_at FROM (
    SELECT DISTINCT ON (a.event_uid) a.event_uid, a.error, a.created_at FROM webhook_attempts a
     WHERE a.org_id = $1 AND a.endpoint_id = $2 AND a.created_at >= $3::timestamptz AND a.created_at <= $4::timestamptz
     ORDER BY a.event_uid, a.created_at DESC, a.id DESC
  ) last
  JOIN events e ON e.org_id = $1 AND e.uid = last.event_uid
  WHERE last.error IS NOT NULL
    AND events_type_matches(e.type, (SELECT w.enabled_events FROM webhook_endpoints w WHERE w.org_id = $1 AND w.id = $2))
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                     WHERE d.org_id = $1 AND d.event_id = e.id AND d.event_created_at = e.created_at AND d.endpoint_id = $2
                       AND (d.state = 'pending' OR (d.state = 'delivered' AND d.updated_at > last.created_at)))
  ORDER BY e.id
  LIMIT $5`;

/** One pending delivery per event, due now. $1 org, $2 endpoint id, $3 event ids, $4 their created_at (in the order of $3). */
const QUEUE_SQL = `INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_created_at, next_attempt_at, created_at, updated_at)
  SELECT $1, $2, e.id, e.created_at, now(), now(), now() FROM unnest($3::bigint[], $4::timestamptz[]) AS e(id, created_at)`;

export type ReplayOutcome = EndpointReplay | 'not_found' | 'disabled';

/**
 * Queues again, now, every event whose last attempt to the endpoint in the
 * window failed and that neither waits for it nor was delivered to it since
 * (POST /api/webhook_endpoints/{id}/replay/). One transaction holding the
 * organization's event stream lock: a second replay (or a resend) finds the
 * first one's deliveries waiting and adds nothing — so, past `batch` events,
 * the same replay again queues the next ones (`has_more`). A disabled
 * endpoint gets nothing (its caller refuses it).
 */
export async function replayFailedEvents(
  store: Store,
  orgId: string,
  endpointUid: string,
  window: ReplayWindow,
  options?: TransactionOptions,
  batch = REPLAY_BATCH,
): Promise<ReplayOutcome> {
  return store.transaction(async (tx): Promise<ReplayOutcome> => {
    await lockEventStream(tx, orgId);
    const [endpoint] = await tx.query<{ id: string; disabled: boolean; until: string }>(ENDPOINT_SQL, [orgId, endpointUid, window.until ?? null]);
    if (!endpoint) return 'not_found';
    if (endpoint.disabled) return 'disabled';
    const found = await tx.query<{ event_id: string; event_created_at: string }>(FAILED_SQL, [orgId, endpoint.id, window.since, endpoint.until, batch + 1]);
    const failed = found.slice(0, batch);
    if (failed.length > 0) await tx.query(QUEUE_SQL, [orgId, endpoint.id, failed.map((row) => row.event_id), failed.map((row) => row.event_created_at)]);
    return { object: 'webhook_endpoint_replay', endpoint: endpointUid, since: window.since, until: endpoint.until, count: failed.length, has_more: found.length > batch };
  }, options);
}
