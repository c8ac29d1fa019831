import type { Queryable } from '../store/store.js';

/** One delivery attempt as the API renders it (docs/webhooks.md): what was sent, what came back, what is next. */
export interface DeliveryAttempt {
  readonly id: string;
  readonly object: 'webhook_delivery_attempt';
  /** The event's id (`evt_…`). */
  readonly event: string;
  readonly attempt: number;
  /** The receiver's status; null when none came (timeout, refused connection, refused address). */
  readonly status_code: number | null;
  readonly duration_ms: number;
  readonly error: string | null;
  /** The first 1 KiB of the receiver's answer. */
  readonly response_body: string | null;
  /** When the next attempt is due; null when none follows (delivered, or given up). */
  readonly next_attempt_at: string | null;
  readonly created_at: string;
}

/** An attempt's error is answered up to this many characters (a redirect's Location can be long). */
export const MAX_ATTEMPT_ERROR_LENGTH = 1024;

const TIMESTAMP = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * One page of an endpoint's attempts, newest first, and how many it has;
 * undefined when the organization has no endpoint `uid`.
 */
export async function listDeliveryAttempts(
  db: Queryable,
  orgId: string,
  endpointUid: string,
  offset: number,
  limit: number,
): Promise<{ count: number; items: DeliveryAttempt[] } | undefined> {
  const [endpoint] = await db.query<{ row_id: string; count: number }>(
    `SELECT w.id::text AS row_id, (SELECT count(*) FROM webhook_attempts a WHERE a.org_id = $1 AND a.endpoint_id = w.id)::int AS count
       FROM webhook_endpoints w WHERE w.org_id = $1 AND w.uid = $2`,
    [orgId, endpointUid],
  );
  if (!endpoint) return undefined;
  if (offset >= endpoint.count) return { count: endpoint.count, items: [] };
  const items = await db.query<DeliveryAttempt>(
    `SELECT a.uid AS id, 'webhook_delivery_attempt' AS object, a.event_uid AS event, a.attempt, a.status_code, a.duration_ms,
            left(a.error, ${MAX_ATTEMPT_ERROR_LENGTH}) AS error, left(a.response_body, 1024) AS response_body,
            to_char(a.next_attempt_at AT TIME ZONE 'UTC', ${TIMESTAMP}) AS next_attempt_at,
            to_char(a.created_at AT TIME ZONE 'UTC', ${TIMESTAMP}) AS created_at
       FROM webhook_attempts a
      WHERE a.org_id = $1 AND a.endpoint_id = $2
      ORDER BY a.created_at DESC, a.id DESC
      LIMIT $3 OFFSET $4`,
    [orgId, endpoint.row_id, limit, offset],
  );
  return { count: endpoint.count, items };
}
