import type { Queryable } from '../store/store.js';
import type { LineErrorList } from './import-error.js';
import { collectLineErrors } from './line-error-query.js';
import { RECORD_KINDS, type RecordKind } from './record-kinds.js';
import { STAGING_TABLE } from './staging.js';

export interface MergeCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

type RecordTable = RecordKind;

/**
 * The one collection the ledger writes to as well: its lines' outstanding
 * amount is the ledger's (src/ledger/), so an import checks the capacity it
 * gives against it.
 */
const LEDGER_LIMITS_TABLE = 'credit_limits';

const isLimits = (kind: RecordTable): boolean => kind.table === LEDGER_LIMITS_TABLE;

/**
 * Merges the record lines of an import batch by batch, with a few set-based
 * statements per batch, and keeps the counts exact across batches, where a
 * uid may come back: `inserted` adds up (a uid is inserted once); of the
 * rows that existed before the import, those the file names are "seen", and
 * those it changed (in any batch) are updated; the rest of the seen are
 * unchanged.
 */
export class RecordMerger {
  private readonly inserted: Record<string, number> = {};

  private constructor(
    private readonly tx: Queryable,
    private readonly orgId: string,
    private readonly kinds: readonly RecordTable[],
    /** Per table, the highest row id before the import: this organization's higher ids are this import's inserts. */
    private readonly idsBefore: Record<string, string>,
  ) {}

  static async start(tx: Queryable, orgId: string, kinds: readonly RecordTable[] = RECORD_KINDS.kinds): Promise<RecordMerger> {
    const idsBefore: Record<string, string> = {};
    for (const kind of kinds) {
      await tx.query(
        `CREATE TEMP TABLE ${sourceOf(kind)} ON COMMIT DROP AS
         SELECT line, uid, ${kind.columns.join(', ')}, created_at, updated_at,
                NULL::bigint AS merge_target_id, NULL::numeric AS merge_outstanding, NULL::boolean AS merge_changed
           FROM ${STAGING_TABLE} WITH NO DATA`,
      );
      await tx.query(`CREATE TEMP TABLE ${seenOf(kind)} (id bigint PRIMARY KEY) ON COMMIT DROP`);
      await tx.query(`CREATE TEMP TABLE ${updatedOf(kind)} (id bigint PRIMARY KEY) ON COMMIT DROP`);
      const [row] = await tx.query<{ id: string }>(`SELECT coalesce(max(id), 0)::text AS id FROM ${kind.table}`);
      idsBefore[kind.table] = row?.id ?? '0';
    }
    return new RecordMerger(tx, orgId, kinds, idsBefore);
  }

  /**
   * Merges the records of the batch now in the staging table. Capacity
   * problems are added to `errors` and their rows are not updated (the
   * import fails and its transaction writes nothing, but the rest of the
   * file is still merged, so its other problems are found in this run).
   */
  async mergeBatch(lines: Readonly<Record<string, number>>, errors: LineErrorList, maxErrors: number): Promise<void> {
    for (const kind of this.kinds) {
      if ((lines[kind.object] ?? 0) === 0) continue;
      const { inserted, pending } = await this.insertNewAndStageTheRest(kind);
      this.inserted[kind.table] = (this.inserted[kind.table] ?? 0) + inserted;
      if (pending === 0) continue;
      // A capacity below the outstanding amount is reported, and that row is
      // left alone (the table's CHECK would abort the transaction, and the
      // rest of the file still has to be checked).
      if (isLimits(kind)) await checkCapacities(this.tx, errors, maxErrors);
      await this.updateChanged(kind);
      await this.tx.query(`TRUNCATE ${sourceOf(kind)}`);
    }
  }

  /** Per table. */
  async counts(): Promise<Record<string, MergeCounts>> {
    const counts: Record<string, MergeCounts> = {};
    for (const kind of this.kinds) counts[kind.table] = await this.countsOf(kind);
    return counts;
  }

  /**
   * One statement for the batch's lines of one table: the last line of each
   * uid, with the stored row it names (one probe of the (org_id, uid) index
   * per uid); the uids not found are inserted at once, the ids of the rows
   * found are noted as seen, and the lines that change a stored row (or would
   * set a capacity below its outstanding amount) are kept in the source table
   * for the update (a row changes as changesStoredRow says; a given
   * updated_at counts only when later, since a drawdown may have touched the
   * limit after the file was written). New uids are inserted even if a capacity problem is found: it fails the
   * whole import, whose transaction then writes nothing.
   *
   * The probe is a LATERAL subquery with OFFSET 0, which PostgreSQL never
   * turns into a join: while a first big import fills a table that has no
   * statistics yet, the planner would otherwise reckon the organization
   * holds a few rows and re-read all of them for every line.
   *
   * Imports of one organization are serialized by an advisory lock, so no
   * other writer creates these uids in between.
   */
  private async insertNewAndStageTheRest(kind: RecordTable): Promise<{ inserted: number; pending: number }> {
    const columns = kind.columns;
    const fromLine = columns.map((c) => `s.${c}`).join(', ');
    const outstanding = isLimits(kind) ? 't.outstanding' : 'NULL::numeric';
    const keep = isLimits(kind) ? 'merge_changed OR capacity < merge_outstanding' : 'merge_changed';
    const [row] = await this.tx.query<{ inserted: string; pending: string }>(
      `WITH latest AS MATERIALIZED (
         SELECT s.line, s.uid, ${fromLine}, s.created_at, s.updated_at, t.id AS merge_target_id, t.merge_outstanding,
                t.id IS NOT NULL AND ${changesStoredRow(kind)} AS merge_changed
           FROM (SELECT DISTINCT ON (uid) * FROM ${STAGING_TABLE} WHERE object = '${kind.object}' ORDER BY uid, line DESC) s
           LEFT JOIN LATERAL (
             SELECT t.id, ${columns.map((c) => `t.${c}`).join(', ')}, t.created_at, t.updated_at, ${outstanding} AS merge_outstanding
               FROM ${kind.table} t WHERE t.org_id = $1 AND t.uid = s.uid OFFSET 0) t ON true),
       seen AS (
         INSERT INTO ${seenOf(kind)} (id) SELECT merge_target_id FROM latest WHERE merge_target_id <= $2 ON CONFLICT DO NOTHING),
       pending AS (
         INSERT INTO ${sourceOf(kind)} SELECT * FROM latest WHERE ${keep} RETURNING 1),
       added AS (
         INSERT INTO ${kind.table} (org_id, uid, ${columns.join(', ')}, created_at, updated_at)
         SELECT $1, uid, ${columns.join(', ')}, coalesce(created_at, now()), coalesce(updated_at, greatest(created_at, now()))
           FROM latest WHERE merge_target_id IS NULL
         RETURNING 1)
       SELECT (SELECT count(*) FROM added)::text AS inserted, (SELECT count(*) FROM pending)::text AS pending`,
      [this.orgId, this.idsBefore[kind.table]],
    );
    return { inserted: Number(row?.inserted ?? 0), pending: Number(row?.pending ?? 0) };
  }

  /**
   * Updates only rows where something differs, so importing the same file
   * twice changes nothing (not even updated_at). An omitted created_at keeps
   * the stored one. A changed row's updated_at is the time of the change
   * (the transaction's), or the line's updated_at if that is later; it never
   * moves backwards, so a client syncing with `updated_from` always sees the
   * change. (A line's earlier updated_at is kept only for a record this
   * import creates, in whichever batch: that is history being loaded, which
   * no client has seen yet.) The condition is checked again on
   * the row as it is now: a drawdown since the staging can only make a
   * change unnecessary.
   */
  private async updateChanged(kind: RecordTable): Promise<void> {
    const columns = kind.columns;
    await this.tx.query(
      `WITH changed AS (
         UPDATE ${kind.table} t
            SET ${columns.map((c) => `${c} = s.${c}`).join(', ')},
                created_at = coalesce(s.created_at, t.created_at),
                updated_at = CASE WHEN t.id > $1 THEN coalesce(s.updated_at, greatest(t.updated_at, now()))
                                  ELSE greatest(s.updated_at, now(), t.updated_at) END
           FROM ${sourceOf(kind)} s
          WHERE s.merge_changed AND t.id = s.merge_target_id AND ${changesStoredRow(kind)}${isLimits(kind) ? ' AND s.capacity >= s.merge_outstanding' : ''}
         RETURNING t.id)
       INSERT INTO ${updatedOf(kind)} (id) SELECT id FROM changed WHERE id <= $1 ON CONFLICT DO NOTHING`,
      [this.idsBefore[kind.table]],
    );
  }

  private async countsOf(kind: RecordTable): Promise<MergeCounts> {
    const [row] = await this.tx.query<{ seen: string; updated: string }>(
      `SELECT (SELECT count(*) FROM ${seenOf(kind)})::text AS seen, (SELECT count(*) FROM ${updatedOf(kind)})::text AS updated`,
    );
    const updated = Number(row?.updated ?? 0);
    return { inserted: this.inserted[kind.table] ?? 0, updated, unchanged: Number(row?.seen ?? 0) - updated };
  }
}

/**
 * Finds credit-limit lines whose capacity would fall below the limit's
 * outstanding amount (the table's CHECK would refuse them anyway; this names
 * the lines).
 */
async function checkCapacities(tx: Queryable, errors: LineErrorList, maxErrors: number): Promise<void> {
  await collectLineErrors<{ line: string; uid: string; capacity: string; outstanding: string }>(
    tx,
    errors,
    maxErrors,
    `SELECT line, uid, capacity::text AS capacity, merge_outstanding::text AS outstanding
       FROM import_${LEDGER_LIMITS_TABLE} WHERE capacity < merge_outstanding`,
    [],
    (row) =>
      `capacity ${row.capacity} is below the outstanding amount of ${row.uid} (${row.outstanding}); record a repayment first or keep the capacity`,
  );
}

/**
 * Whether line `s` changes stored row `t`: a field differs, a given
 * created_at differs, or a given updated_at is later than the stored one.
 */
function changesStoredRow(kind: RecordTable): string {
  return `((${kind.columns.map((c) => `t.${c}`).join(', ')}) IS DISTINCT FROM (${kind.columns.map((c) => `s.${c}`).join(', ')})
          OR t.created_at <> coalesce(s.created_at, t.created_at)
          OR s.updated_at > t.updated_at)`;
}

function sourceOf(kind: RecordTable): string {
  return `import_${kind.table}`;
}

/** Ids of the rows that existed before the import and that the file names. */
function seenOf(kind: RecordTable): string {
  return `import_seen_${kind.table}`;
}

/** Ids of the rows that existed before the import and that it changed: a subset of seenOf. */
function updatedOf(kind: RecordTable): string {
  return `import_updated_${kind.table}`;
}
