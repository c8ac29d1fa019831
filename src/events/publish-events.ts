import type { Queryable, Statement, Store, TransactionOptions } from '../store/store.js';

/** Events moved into the log by one publication, at most. */
export const MAX_EVENTS_PER_PUBLICATION = 500;

/** Published only once the synchronous standby (if any) has them: no node delivers an event a failover could lose. */
const SYNCHRONOUS_STANDBY: TransactionOptions = { synchronousCommit: 'remote_apply' };

export interface Publication {
  /** Events moved from the outbox into the log. */
  readonly published: number;
  /** Deliveries created for them (one per event and matching endpoint). */
  readonly deliveries: number;
  /** Whether the outbox still holds events of the organization (more than one publication moves). */
  readonly more: boolean;
}

/**
 * Locks the organization's stream (publications of one organization run one
 * at a time, on any node): the lock is what makes created_at only move forward.
 */
function lockStream(orgId: string): Statement {
  return {
    sql: `INSERT INTO event_streams AS s (org_id, published_through) VALUES ($1, '-infinity')
          ON CONFLICT (org_id) DO UPDATE SET published_through = s.published_through RETURNING s.org_id`,
    params: [orgId],
  };
}

/**
 * Moves the organization's committed outbox rows into the log, in the order
 * they were recorded (a change that waited for another's row lock is
 * recorded after it), each stamped created_at one microsecond after the
 * last (never before the database's clock), and creates their deliveries.
 * The clock is read once (`base`, one row, evaluated once): read per row, as
 * a join would, the stamps of rows that the DELETE returns out of id order
 * (the outbox reuses the space VACUUM frees) would collide or cross.
 * A transaction still open has no visible rows: when it commits, its events
 * are stamped after everything published meanwhile, so a cursor never
 * skips them. $1 the organization's id, $2 the most rows to move.
 */
const PUBLISH_SQL = `WITH ready AS (
    DELETE FROM event_outbox o
     WHERE o.org_id = $1
       AND o.id IN (SELECT id FROM event_outbox
                     WHERE org_id = $1 ORDER BY id LIMIT $2)
    RETURNING o.*
  ), base AS MATERIALIZED (
    SELECT greatest(clock_timestamp(), published_through + interval '1 microsecond') AS at FROM event_streams WHERE org_id = $1
  ), stamped AS (
    SELECT r.*, (SELECT at FROM base) + (row_number() OVER (ORDER BY r.id) - 1) * interval '1 microsecond' AS stamped_at
      FROM ready r
  ), inserted AS (
    INSERT INTO events (org_id, uid, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id, created_at)
    SELECT $1, uid, type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id, stamped_at
      FROM stamped ORDER BY stamped_at
    RETURNING id, type, created_at
  ), advanced AS (
    UPDATE event_streams SET published_through = (SELECT max(created_at) FROM inserted)
     WHERE org_id = $1 AND EXISTS (SELECT 1 FROM inserted)
    RETURNING org_id
  ), fanned AS (
    INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_created_at, next_attempt_at, created_at, updated_at)
    SELECT $1, w.id, i.id, i.created_at, now(), now(), now()
      FROM inserted i JOIN webhook_endpoints w ON w.org_id = $1 AND NOT w.disabled AND events_type_matches(i.type, w.enabled_events)
    RETURNING id
  )
  SELECT (SELECT count(*) FROM inserted)::int AS published,
         (SELECT count(*) FROM fanned)::int AS deliveries,
         (SELECT count(*) FROM advanced)::int AS advanced,
         EXISTS (SELECT 1 FROM event_outbox WHERE org_id = $1 AND id NOT IN (SELECT id FROM ready)) AS more`;

/** A publication's statements, in order (the lock, then PUBLISH_SQL), for one transaction of their own. */
export function publicationStatements(orgId: string, max = MAX_EVENTS_PER_PUBLICATION): Statement[] {
  return [lockStream(orgId), { sql: PUBLISH_SQL, params: [orgId, max] }];
}

/** One publication of the organization's events (see PUBLISH_SQL), in a transaction of its own. */
export async function publishEvents(store: Store, orgId: string, max = MAX_EVENTS_PER_PUBLICATION): Promise<Publication> {
  const rows = await store.transaction((tx) => tx.commitWith(publicationStatements(orgId, max)), SYNCHRONOUS_STANDBY);
  const [result] = (rows[1] ?? []) as { published: number; deliveries: number; more: boolean }[];
  return { published: Number(result?.published ?? 0), deliveries: Number(result?.deliveries ?? 0), more: result?.more === true };
}

/** Every organization whose outbox holds events (the rows of other nodes, the CLI and the import), at most `limit`. */
export async function organizationsWithPendingEvents(db: Queryable, limit = 1000): Promise<string[]> {
  const rows = await db.query<{ org_id: string }>('SELECT DISTINCT org_id::text AS org_id FROM event_outbox LIMIT $1', [limit]);
  return rows.map((row) => row.org_id);
}

/** Publishes everything the organization's outbox holds that can be published now (a CLI command after its write, a test, the bench's load). */
export async function publishAllEvents(store: Store, orgId: string, max = MAX_EVENTS_PER_PUBLICATION): Promise<number> {
  let total = 0;
  for (;;) {
    const publication = await publishEvents(store, orgId, max);
    total += publication.published;
    if (!publication.more || publication.published === 0) return total;
  }
}
