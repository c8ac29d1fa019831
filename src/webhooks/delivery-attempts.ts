import type { Queryable } from '../store/store.js';

/** One delivery attempt as the API renders it (docs/webhooks.md): what was sent, what came back, what is next. */
export interface DeliveryAttempt {
  readonly id: string;
  readonly object: 'webhook_delivery_attempt';
  /** The event's id (`evt_…`). */
  readonly event: string;
  /** The event's type; null once the event has left the log (pruned before its attempts). */
  readonly event_type: string | null;
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

/** An attempt's outcome, as the `status` filter names it: a 2xx answer, or anything else (the attempt has an `error`). */
export const ATTEMPT_STATUSES = ['succeeded', 'failed'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** Which attempts a list takes: by outcome, and by their event's type (any of `types`). */
export interface DeliveryAttemptFilters {
  readonly status?: AttemptStatus | undefined;
  readonly types?: readonly string[] | undefined;
}

/** An attempt's error is answered up to this many characters (a redirect's Location can be long). */
export const MAX_ATTEMPT_ERROR_LENGTH = 1024;

const TIMESTAMP = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * The filters as SQL over `a` (webhook_attempts) and, with a type, `e`
 * (events): $1 org, $3 the status or null, $4 the types. An attempt failed
 * when it has an error (as a replay reads it).
 */
function filtered(endpoint: string, byType: boolean): string {
  return `a.org_id = $1 AND a.endpoint_id = ${endpoint} AND ($3::text IS NULL OR (a.error IS NULL) = ($3::text = 'succeeded'))${byType ? ' AND e.type = ANY($4::text[])' : ''}`;
}

const EVENT_OF_ATTEMPT = 'events e ON e.org_id = $1 AND e.uid = a.event_uid';

/**
 * One page of an endpoint's attempts, newest first, and how many match;
 * undefined when the organization has no endpoint `uid`. Each statement is
 * constrained by org_id on every table (a Citus router statement); the
 * event is found by its (org_id, uid) index, in each day's partition.
 */
export async function listDeliveryAttempts(
  db: Queryable,
  orgId: string,
  endpointUid: string,
  page: { readonly offset: number; readonly limit: number },
  filters: DeliveryAttemptFilters = {},
): Promise<{ count: number; items: DeliveryAttempt[] } | undefined> {
  const status = filters.status ?? null;
  const types = filters.types ? `{${filters.types.join(',')}}` : null;
  const byType = types !== null;
  // Without a type filter the count reads no event.
  const countFrom = byType ? `webhook_attempts a JOIN ${EVENT_OF_ATTEMPT}` : 'webhook_attempts a';
  const [endpoint] = await db.query<{ row_id: string; count: number }>(
    `SELECT w.id::text AS row_id,
            (SELECT count(*) FROM ${countFrom} WHERE ${filtered('w.id', byType)})::int AS count
       FROM webhook_endpoints w WHERE w.org_id = $1 AND w.uid = $2`,
    byType ? [orgId, endpointUid, status, types] : [orgId, endpointUid, status],
  );
  if (!endpoint) return undefined;
  if (page.offset >= endpoint.count) return { count: endpoint.count, items: [] };
  const items = await db.query<DeliveryAttempt>(
    `SELECT a.uid AS id, 'webhook_delivery_attempt' AS object, a.event_uid AS event, e.type AS event_type, a.attempt, a.status_code, a.duration_ms,
            left(a.error, ${MAX_ATTEMPT_ERROR_LENGTH}) AS error, left(a.response_body, 1024) AS response_body,
            to_char(a.next_attempt_at AT TIME ZONE 'UTC', ${TIMESTAMP}) AS next_attempt_at,
            to_char(a.created_at AT TIME ZONE 'UTC', ${TIMESTAMP}) AS created_at
       FROM webhook_attempts a
       LEFT JOIN ${EVENT_OF_ATTEMPT}
      WHERE ${filtered('$2', false)} AND ($4::text[] IS NULL OR e.type = ANY($4::text[]))
      ORDER BY a.created_at DESC, a.id DESC
      LIMIT $5 OFFSET $6`,
    [orgId, endpoint.row_id, status, types, page.limit, page.offset],
  );
  return { count: endpoint.count, items };
}
