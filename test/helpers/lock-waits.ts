import type { Store } from '../../src/store/store.js';

export interface LockWaitFilter {
  /** The waiting statement's text contains this (a marker written into it). */
  readonly statementLike?: string;
  /** The waiting backend holds a granted lock on this relation of the caller's schema (e.g. 'idempotency_keys'). */
  readonly holding?: string;
}

/**
 * How many backends of this node, other than the caller's, wait for a lock
 * held by another transaction. On PostgreSQL that backend waits itself
 * (wait_event_type 'Lock'). On a Citus coordinator the statement's lock wait
 * happens on the worker that holds the shard while this node's backend waits
 * for the worker's answer: Citus's cluster-wide `citus_lock_waits` names it
 * (by its global pid: node id × 10¹⁰ + the pid on that node), with the
 * statement as it was sent to this node.
 */
export async function lockWaiters(db: Store, filter: LockWaitFilter = {}): Promise<number> {
  const [{ citus } = { citus: false }] = await db.query<{ citus: boolean }>(`SELECT to_regclass('pg_catalog.citus_lock_waits') IS NOT NULL AS citus`);
  const waitingOnWorkers = citus
    ? (
        await db.query<{ pid: number }>(
          `SELECT DISTINCT (waiting_gpid % 10000000000)::int AS pid FROM citus_lock_waits
            WHERE waiting_gpid / 10000000000 = citus_backend_gpid() / 10000000000`,
        )
      ).map((row) => row.pid)
    : [];
  const [row] = await db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM pg_stat_activity a
      WHERE (a.wait_event_type = 'Lock' OR a.pid = ANY ($1::int[])) AND a.pid <> pg_backend_pid()
        AND ($2::text IS NULL OR a.query LIKE '%' || $2 || '%')
        AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted AND l.relation = to_regclass($3)))`,
    [waitingOnWorkers, filter.statementLike ?? null, filter.holding ?? null],
  );
  return Number(row?.n ?? 0);
}
