import type { Queryable } from '../store/store.js';
import type { LineErrorList } from './import-error.js';

/**
 * Runs a query that finds invalid lines (it must select `line` and may
 * select anything else the message needs), keeps the first of them in line
 * order and counts them all, without fetching every row of a huge file.
 */
export async function collectLineErrors<Row extends { line: string }>(
  tx: Queryable,
  errors: LineErrorList,
  limit: number,
  sql: string,
  params: readonly unknown[],
  reason: (row: Row) => string,
): Promise<void> {
  const rows = await tx.query<Row & { total: string }>(
    `SELECT found.*, count(*) OVER ()::text AS total FROM (${sql}) found ORDER BY found.line LIMIT ${Math.max(1, limit)}`,
    params,
  );
  const first = rows[0];
  if (!first) return;
  errors.addCounted(
    rows.map((row) => ({ line: Number(row.line), reason: reason(row) })),
    Number(first.total),
  );
}
