import { microsecondAfter } from '../ledger/record-changed-at.js';
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
 *
 * Sharding-ready (docs/scaling.md): no statement joins the import's
 * temporary tables with a table of the organization's records. A statement
 * reads the temporary tables alone, or reads the records of the
 * organization alone (`org_id = $1`) into a temporary table, or writes them
 * from the temporary tables (INSERT … SELECT) or from array parameters that
 * a statement on the temporary tables produced as text (the process passes
 * the text back without reading it). On a distributed PostgreSQL the
 * temporary tables live on the coordinator and each statement on the
 * records goes to the one shard of the organization.
 */
export class RecordMerger {
  private readonly inserted: Record<string, number> = {};

  private constructor(
    private readonly tx: Queryable,
    private readonly orgId: string,
    private readonly kinds: readonly RecordTable[],
  ) {}

  static async start(tx: Queryable, orgId: string, kinds: readonly RecordTable[] = RECORD_KINDS.kinds): Promise<RecordMerger> {
    for (const kind of kinds) {
      await tx.query(
        `CREATE TEMP TABLE ${sourceOf(kind)} ON COMMIT DROP AS
         SELECT line, uid, ${kind.columns.join(', ')}, created_at, updated_at,
                NULL::bigint AS merge_target_id, NULL::numeric AS merge_outstanding, NULL::boolean AS merge_changed, NULL::boolean AS merge_created
           FROM ${STAGING_TABLE} WITH NO DATA`,
      );
      await tx.query(
        `CREATE TEMP TABLE ${storedOf(kind)} ON COMMIT DROP AS
         SELECT NULL::bigint AS id, uid, ${kind.columns.join(', ')}, created_at, updated_at, NULL::numeric AS merge_outstanding
           FROM ${STAGING_TABLE} WITH NO DATA`,
      );
      // By uid: a uid names one row of the organization.
      await tx.query(`CREATE TEMP TABLE ${createdOf(kind)} (uid text COLLATE "C" PRIMARY KEY) ON COMMIT DROP`);
      await tx.query(`CREATE TEMP TABLE ${seenOf(kind)} (uid text COLLATE "C" PRIMARY KEY) ON COMMIT DROP`);
      await tx.query(`CREATE TEMP TABLE ${updatedOf(kind)} (uid text COLLATE "C" PRIMARY KEY) ON COMMIT DROP`);
    }
    return new RecordMerger(tx, orgId, kinds);
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
    }
  }

  /** Per table. */
  async counts(): Promise<Record<string, MergeCounts>> {
    const counts: Record<string, MergeCounts> = {};
    for (const kind of this.kinds) counts[kind.table] = await this.countsOf(kind);
    return counts;
  }

  /**
   * The batch's lines of one table: the last line of each uid, with the
   * stored row it names; the uids not found are inserted at once, the rows
   * found that existed before the import are noted as seen, and the lines
   * that change a stored row (or would set a capacity below its outstanding
   * amount) are marked for the update (a row changes as changesStoredRow
   * says; a given updated_at counts only when later, since a drawdown may
   * have touched the limit after the file was written). New uids are
   * inserted even if a capacity problem is found: it fails the whole import,
   * whose transaction then writes nothing.
   *
   * Imports of one organization are serialized by an advisory lock, so no
   * other writer creates these uids in between.
   */
  private async insertNewAndStageTheRest(kind: RecordTable): Promise<{ inserted: number; pending: number }> {
    const columns = kind.columns;
    // 1. The last line of each uid (temporary tables only), and the uids as one array text.
    await this.tx.query(`TRUNCATE ${sourceOf(kind)}, ${storedOf(kind)}`);
    const [latest] = await this.tx.query<{ uids: string | null }>(
      `WITH latest AS (
         INSERT INTO ${sourceOf(kind)} (line, uid, ${columns.join(', ')}, created_at, updated_at)
         SELECT DISTINCT ON (uid) line, uid, ${columns.join(', ')}, created_at, updated_at
           FROM ${STAGING_TABLE} WHERE object = '${kind.object}' ORDER BY uid, line DESC
         RETURNING uid)
       SELECT array_agg(uid)::text AS uids FROM latest`,
    );
    // 2. The stored rows those uids name: the organization's records alone.
    const outstanding = isLimits(kind) ? 'outstanding' : 'NULL::numeric';
    await this.tx.query(
      `INSERT INTO ${storedOf(kind)} (id, uid, ${columns.join(', ')}, created_at, updated_at, merge_outstanding)
       SELECT id, uid, ${columns.join(', ')}, created_at, updated_at, ${outstanding}
         FROM ${kind.table} WHERE org_id = $1 AND uid = ANY ($2::text[])`,
      [this.orgId, latest?.uids ?? '{}'],
    );
    // 3. Each line against its stored row (temporary tables only): what changes, what is new, what was seen.
    const capacityBelow = isLimits(kind) ? 's.capacity < t.merge_outstanding' : 'false';
    const [marked] = await this.tx.query<{ inserted: string; pending: string }>(
      `WITH matched AS (
         UPDATE ${sourceOf(kind)} s
            SET merge_target_id = t.id, merge_outstanding = t.merge_outstanding, merge_changed = ${changesStoredRow(kind)},
                merge_created = EXISTS (SELECT 1 FROM ${createdOf(kind)} c WHERE c.uid = s.uid)
           FROM ${storedOf(kind)} t WHERE t.uid = s.uid
         RETURNING s.uid, s.merge_created, s.merge_changed OR ${capacityBelow} AS pending),
       seen AS (
         INSERT INTO ${seenOf(kind)} (uid) SELECT uid FROM matched WHERE NOT merge_created ON CONFLICT DO NOTHING),
       created AS (
         INSERT INTO ${createdOf(kind)} (uid)
         SELECT uid FROM ${sourceOf(kind)} s WHERE NOT EXISTS (SELECT 1 FROM ${storedOf(kind)} t WHERE t.uid = s.uid)
         RETURNING 1)
       SELECT (SELECT count(*) FROM created)::text AS inserted, (SELECT count(*) FROM matched WHERE pending)::text AS pending`,
    );
    // 4. The new uids into the organization's table (INSERT … SELECT from the temporary table).
    if (Number(marked?.inserted ?? 0) > 0) {
      await this.tx.query(
        `INSERT INTO ${kind.table} (org_id, uid, ${columns.join(', ')}, created_at, updated_at)
         SELECT $1, uid, ${columns.join(', ')}, coalesce(created_at, now()), coalesce(updated_at, greatest(created_at, now()))
           FROM ${sourceOf(kind)} WHERE merge_target_id IS NULL ORDER BY uid`,
        [this.orgId],
      );
    }
    return { inserted: Number(marked?.inserted ?? 0), pending: Number(marked?.pending ?? 0) };
  }

  /**
   * Updates only rows where something differs, so importing the same file
   * twice changes nothing (not even updated_at). An omitted created_at keeps
   * the stored one. A changed row's updated_at is the time of the change
   * (the transaction's), or the line's updated_at if that is later; it never
   * moves backwards, so a client syncing with `updated_from` always sees the
   * change. (A line's earlier updated_at is kept only for a record this
   * import creates: that is history being loaded, which no client has seen
   * yet. A later line of the same import, in another batch, moves it on like
   * any change: the line's updated_at if later, else a microsecond.) The
   * condition is checked again on the row as it is now: a drawdown since the
   * staging can only make a change unnecessary.
   *
   * The changed lines go to the organization's table as array parameters
   * (one per column, produced as text by a statement on the temporary table).
   */
  private async updateChanged(kind: RecordTable): Promise<void> {
    const columns = kind.columns;
    const passed = ['merge_target_id', 'uid', ...columns, 'created_at', 'updated_at', 'merge_outstanding', 'merge_created'];
    // The transaction's time comes along as a value: on a distributed
    // PostgreSQL (Citus) an UPDATE of a sharded table may not call now() inside CASE or coalesce.
    const [changed] = await this.tx.query<Record<string, string | null>>(
      `SELECT count(*)::text AS rows, now()::text AS now, ${passed.map((c) => `array_agg(${c})::text AS ${c}`).join(', ')}
         FROM ${sourceOf(kind)} WHERE merge_changed${isLimits(kind) ? ' AND capacity >= merge_outstanding' : ''}`,
    );
    if (!changed || changed.rows === '0') return;
    const types: Record<string, string> = {
      merge_target_id: 'bigint',
      uid: 'text',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
      merge_outstanding: 'numeric',
      merge_created: 'boolean',
    };
    for (const column of RECORD_KINDS.stagingColumns) types[column.name] = column.sqlType.replace(' COLLATE "C"', '');
    const unnest = `unnest(${passed.map((c, i) => `$${i + 3}::${types[c]}[]`).join(', ')}) AS s(${passed.join(', ')})`;
    const [updated] = await this.tx.query<{ uids: string | null }>(
      `WITH changed AS (
         UPDATE ${kind.table} t
            SET ${columns.map((c) => `${c} = s.${c}`).join(', ')},
                created_at = coalesce(s.created_at, t.created_at),
                updated_at = CASE WHEN s.merge_created THEN greatest(coalesce(s.updated_at, $2::timestamptz), ${microsecondAfter('t.updated_at')})
                                  ELSE greatest(s.updated_at, $2::timestamptz, ${microsecondAfter('t.updated_at')}) END
           FROM ${unnest}
          WHERE t.org_id = $1 AND t.id = s.merge_target_id AND ${changesStoredRow(kind)}
         RETURNING t.uid, s.merge_created)
       SELECT array_agg(uid)::text AS uids FROM changed WHERE NOT merge_created`,
      [this.orgId, changed.now, ...passed.map((c) => changed[c])],
    );
    if (updated?.uids) {
      await this.tx.query(`INSERT INTO ${updatedOf(kind)} (uid) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, [updated.uids]);
    }
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

/** A batch's last line of each uid, with what the merge found for it. */
function sourceOf(kind: RecordTable): string {
  return `import_${kind.table}`;
}

/** The stored rows a batch's uids name, read from the organization's table. */
function storedOf(kind: RecordTable): string {
  return `import_stored_${kind.table}`;
}

/** The uids this import inserted (in any batch). */
function createdOf(kind: RecordTable): string {
  return `import_created_${kind.table}`;
}

/** Uids of the rows that existed before the import and that the file names. */
function seenOf(kind: RecordTable): string {
  return `import_seen_${kind.table}`;
}

/** Uids of the rows that existed before the import and that it changed: a subset of seenOf. */
function updatedOf(kind: RecordTable): string {
  return `import_updated_${kind.table}`;
}
