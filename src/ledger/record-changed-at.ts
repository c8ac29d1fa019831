/**
 * A record's updated_at after a change: the time its stored row changed
 * (the transaction's `now()`), and always later than it was, by a
 * microsecond at least. Writes that share a transaction (the write queue's)
 * or waited on the row's lock would otherwise give successive states one
 * updated_at, and a webhook receiver drops stale states by it. Never an
 * entry's own `at`, which may lie in the past: a client syncing with
 * `updated_from` would never see a change stamped before its last sync.
 *
 * The microsecond is added in UTC, with immutable functions only:
 * `timestamptz + interval` is STABLE, and Citus refuses a STABLE function
 * of a column in an UPDATE of a distributed table.
 */
export function changedAt(storedColumn: string): string {
  return `greatest(${microsecondAfter(storedColumn)}, now())`;
}

/** `column` plus one microsecond (see changedAt). */
export function microsecondAfter(column: string): string {
  return `((${column} AT TIME ZONE 'UTC') + interval '1 microsecond') AT TIME ZONE 'UTC'`;
}

/** changedAt of a row aliased `t`. */
export const RECORD_CHANGED_AT = changedAt('t.updated_at');
