import type { Queryable } from '../store/store.js';
import type { LineErrorList } from './import-error.js';
import { collectLineErrors } from './line-error-query.js';
import { STAGING_TABLE } from './staging.js';

export interface MergeCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

interface RecordTable {
  readonly object: 'payment_method' | 'credit_limit';
  readonly table: 'payment_methods' | 'credit_limits';
  /** Columns an import line sets, besides uid and the timestamps. */
  readonly columns: readonly string[];
}

const PAYMENT_METHODS: RecordTable = {
  object: 'payment_method',
  table: 'payment_methods',
  columns: ['entity', 'type', 'currency', 'last_2'],
};

// outstanding is not here: only ledger lines move it.
const CREDIT_LIMITS: RecordTable = {
  object: 'credit_limit',
  table: 'credit_limits',
  columns: ['entity', 'currency', 'capacity', 'rate'],
};

/**
 * Finds credit-limit lines whose capacity would fall below the limit's
 * outstanding amount (the table's CHECK would refuse them anyway; this names
 * the lines).
 */
export async function checkCapacities(tx: Queryable, orgId: string, errors: LineErrorList, maxErrors: number): Promise<void> {
  await collectLineErrors<{ line: string; uid: string; capacity: string; outstanding: string }>(
    tx,
    errors,
    maxErrors,
    `SELECT s.line, s.uid, s.capacity::text AS capacity, t.outstanding::text AS outstanding
       FROM ${latestOf(CREDIT_LIMITS)} s JOIN credit_limits t ON t.org_id = $1 AND t.uid = s.uid
      WHERE s.capacity < t.outstanding`,
    [orgId],
    (row) =>
      `capacity ${row.capacity} is below the outstanding amount of ${row.uid} (${row.outstanding}); record a repayment first or keep the capacity`,
  );
}

export async function mergePaymentMethods(tx: Queryable, orgId: string): Promise<MergeCounts> {
  return mergeRecords(tx, orgId, PAYMENT_METHODS);
}

export async function mergeCreditLimits(tx: Queryable, orgId: string): Promise<MergeCounts> {
  return mergeRecords(tx, orgId, CREDIT_LIMITS);
}

/** The last line of each uid wins, as if the lines were applied in order. */
function latestOf(kind: RecordTable): string {
  return `(SELECT DISTINCT ON (uid) line, uid, ${kind.columns.join(', ')}, created_at, updated_at
             FROM ${STAGING_TABLE} WHERE object = '${kind.object}' ORDER BY uid, line DESC)`;
}

/**
 * One set-based upsert by uid. Updates only rows where something differs, so
 * importing the same file twice changes nothing (not even updated_at); an
 * omitted created_at keeps the stored one, an omitted updated_at becomes now
 * when something else changed.
 *
 * Two statements rather than INSERT … ON CONFLICT DO UPDATE, because the
 * update must know whether a time was given, which `excluded` cannot tell.
 * Imports of one organization are serialized by an advisory lock, so no
 * other writer creates these uids in between.
 */
async function mergeRecords(tx: Queryable, orgId: string, kind: RecordTable): Promise<MergeCounts> {
  const source = `import_${kind.table}`;
  await tx.query(`CREATE TEMP TABLE ${source} ON COMMIT DROP AS SELECT * FROM ${latestOf(kind)} latest`);
  const [total] = await tx.query<{ count: string }>(`SELECT count(*)::text AS count FROM ${source}`);
  const distinct = Number(total?.count ?? 0);
  if (distinct === 0) return { inserted: 0, updated: 0, unchanged: 0 };
  await tx.query(`ANALYZE ${source}`);

  const columns = kind.columns;
  const [updated] = await tx.query<{ count: string }>(
    `WITH changed AS (
       UPDATE ${kind.table} t
          SET ${columns.map((c) => `${c} = s.${c}`).join(', ')},
              created_at = coalesce(s.created_at, t.created_at),
              updated_at = coalesce(s.updated_at, now())
         FROM ${source} s
        WHERE t.org_id = $1 AND t.uid = s.uid
          AND ((${columns.map((c) => `t.${c}`).join(', ')}) IS DISTINCT FROM (${columns.map((c) => `s.${c}`).join(', ')})
               OR t.created_at <> coalesce(s.created_at, t.created_at)
               OR t.updated_at <> coalesce(s.updated_at, t.updated_at))
       RETURNING 1)
     SELECT count(*)::text AS count FROM changed`,
    [orgId],
  );
  const [inserted] = await tx.query<{ count: string }>(
    `WITH added AS (
       INSERT INTO ${kind.table} (org_id, uid, ${columns.join(', ')}, created_at, updated_at)
       SELECT $1, s.uid, ${columns.map((c) => `s.${c}`).join(', ')},
              coalesce(s.created_at, now()), coalesce(s.updated_at, greatest(s.created_at, now()))
         FROM ${source} s
        WHERE NOT EXISTS (SELECT 1 FROM ${kind.table} t WHERE t.org_id = $1 AND t.uid = s.uid)
       RETURNING 1)
     SELECT count(*)::text AS count FROM added`,
    [orgId],
  );
  const insertedCount = Number(inserted?.count ?? 0);
  const updatedCount = Number(updated?.count ?? 0);
  return { inserted: insertedCount, updated: updatedCount, unchanged: distinct - insertedCount - updatedCount };
}
