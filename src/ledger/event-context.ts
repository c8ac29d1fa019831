import type { Statement } from '../store/store.js';

/**
 * What the events of a change say caused it (SPEC §3c: `request_id` and
 * `idempotency_key`, or the import's id). The triggers that record events
 * (017_events.sql) read it from the transaction's `lending.event_context`
 * setting, which this statement sets before each write of a transaction.
 * SET LOCAL rather than set_config(): on Citus the triggers run on the
 * workers, and Citus passes a SET LOCAL on to them (Statement.forWorkers).
 */
export interface EventCause {
  readonly requestId?: string | undefined;
  readonly idempotencyKey?: string | undefined;
  readonly importId?: string | undefined;
}

export function eventCauseStatement(cause: EventCause): Statement {
  const context = JSON.stringify({
    request_id: cause.requestId ?? null,
    idempotency_key: cause.idempotencyKey ?? null,
    import_id: cause.importId ?? null,
  });
  return { sql: `SET LOCAL lending.event_context = '${context.replaceAll("'", "''")}'`, params: [], forWorkers: true };
}

/** One write of a joined statement (joined-entries.ts): the records it changes, by object type, and their cause. */
export interface JoinedCause {
  readonly objects: Readonly<Record<string, string>>;
  readonly cause: EventCause;
}

/**
 * The statement that names, for the events of a statement that writes
 * several requests' records at once, each record's request: the context's
 * `objects` (object type → uid → cause; 027_joined_write_causes.sql).
 */
export function joinedEventCausesStatement(writes: readonly JoinedCause[]): Statement {
  const objects: Record<string, Record<string, { request_id: string | null; idempotency_key: string | null }>> = {};
  for (const { objects: changed, cause } of writes) {
    for (const [type, uid] of Object.entries(changed)) {
      (objects[type] ??= {})[uid] = { request_id: cause.requestId ?? null, idempotency_key: cause.idempotencyKey ?? null };
    }
  }
  const context = JSON.stringify({ request_id: null, idempotency_key: null, import_id: null, objects });
  return { sql: `SET LOCAL lending.event_context = '${context.replaceAll("'", "''")}'`, params: [], forWorkers: true };
}
