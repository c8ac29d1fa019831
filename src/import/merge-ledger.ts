import type { Queryable } from '../store/store.js';
import type { LineErrorList } from './import-error.js';
import { collectLineErrors } from './line-error-query.js';
import { LEDGER_FIRST_TABLE, LEDGER_UNRESOLVED_TABLE, STAGING_TABLE } from './staging.js';

export interface LedgerCounts {
  /** New entries recorded. */
  applied: number;
  /** Entries already recorded with the same content: no-ops. */
  unchanged: number;
}

const TIMESTAMP_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

// Stored rows are found with LATERAL … OFFSET 0 and NOT EXISTS (… OFFSET 0),
// which PostgreSQL keeps as one index probe per line (see stageLatest in
// merge-records.ts for why a join is not left to the planner).

const LEDGER_OBJECTS = `('drawdown', 'repayment')`;

/** What the batches staged so far leave for the checks at the end. */
export interface LedgerStaging {
  /** Some limit a ledger line names was not found when its batch was staged. */
  unresolvedLimits: boolean;
}

/**
 * Sets a batch of `lines` ledger lines aside, once its records are merged
 * (so a limit the batch itself defines is found): each line's limit is
 * looked up, and the first line of each id not seen before is kept with its
 * limit's id. A line that uses an id seen before (in this batch or an
 * earlier one) with other content is reported now; a line whose limit is
 * not found yet is kept to be looked up again at the end. Runs while the
 * next batch is parsed, so the end of the import has no whole-file sort or
 * lookup left to do, and no copy of every line.
 */
export async function stageLedgerBatch(
  tx: Queryable,
  orgId: string,
  lines: number,
  staging: LedgerStaging,
  errors: LineErrorList,
  maxErrors: number,
): Promise<void> {
  // One probe of the limits' (org_id, uid) index per line costs less than
  // remembering each uid once in a table of the import's own: that took a
  // probe of its key per line too, plus its inserts (1,000,000 lines:
  // 3.4 s for that table, and it grew out of the session's temp buffers).
  const [staged] = await tx.query<{ kept: string; unresolved: string }>(
    `WITH looked_up AS MATERIALIZED (
       SELECT s.line, s.uid, s.object, s.ledger_amount AS amount, s.ledger_at AS at, s.ledger_limit_uid AS limit_uid, l.id AS limit_id
         FROM ${STAGING_TABLE} s
         LEFT JOIN LATERAL (SELECT l.id FROM credit_limits l WHERE l.org_id = $1 AND l.uid = s.ledger_limit_uid OFFSET 0) l ON true
        WHERE s.object IN ${LEDGER_OBJECTS}),
     added AS (
       INSERT INTO ${LEDGER_FIRST_TABLE} (line, id, kind, amount, at, limit_uid, limit_id)
       SELECT DISTINCT ON (uid) line, uid, object, amount, at, limit_uid, limit_id FROM looked_up ORDER BY uid, line
       ON CONFLICT (id) DO NOTHING
       RETURNING 1),
     unresolved AS (
       INSERT INTO ${LEDGER_UNRESOLVED_TABLE} (line, limit_uid)
       SELECT line, limit_uid FROM looked_up WHERE limit_id IS NULL
       RETURNING 1)
     SELECT (SELECT count(*) FROM added)::text AS kept, (SELECT count(*) FROM unresolved)::text AS unresolved`,
    [orgId],
  );
  if (Number(staged?.unresolved ?? 0) > 0) staging.unresolvedLimits = true;
  // Every line kept as its id's first: no line of this batch reuses an id.
  if (Number(staged?.kept ?? 0) === lines) return;
  await collectLineErrors<{ line: string; id: string; first_line: string }>(
    tx,
    errors,
    maxErrors,
    `SELECT s.line, s.uid AS id, f.line AS first_line
       FROM ${STAGING_TABLE} s JOIN ${LEDGER_FIRST_TABLE} f ON f.id = s.uid AND f.line <> s.line
      WHERE s.object IN ${LEDGER_OBJECTS}
        AND ((s.object, s.ledger_limit_uid, s.ledger_amount) IS DISTINCT FROM (f.kind, f.limit_uid, f.amount)
             OR (s.ledger_at IS NOT NULL AND f.at IS NOT NULL AND s.ledger_at <> f.at))`,
    [],
    (row) => `ledger id '${row.id}' is used on line ${row.first_line} with different content`,
  );
}

/**
 * Reports the ledger lines whose credit limit neither the store nor the
 * file has, once the whole file is merged (a limit no batch found may be
 * one the file defines after the lines that name it).
 */
export async function checkLedgerLimits(tx: Queryable, orgId: string, staging: LedgerStaging, errors: LineErrorList, maxErrors: number): Promise<void> {
  if (!staging.unresolvedLimits) return;
  await tx.query(
    `UPDATE ${LEDGER_FIRST_TABLE} f
        SET limit_id = (SELECT l.id FROM credit_limits l WHERE l.org_id = $1 AND l.uid = f.limit_uid)
      WHERE f.limit_id IS NULL`,
    [orgId],
  );
  await collectLineErrors<{ line: string; limit_uid: string }>(
    tx,
    errors,
    maxErrors,
    `SELECT u.line, u.limit_uid FROM ${LEDGER_UNRESOLVED_TABLE} u
      WHERE NOT EXISTS (SELECT 1 FROM credit_limits l WHERE l.org_id = $1 AND l.uid = u.limit_uid OFFSET 0)`,
    [orgId],
    (row) => `no credit limit '${row.limit_uid}' in this organization or this file`,
  );
}

/**
 * Applies the new ledger entries in file order, all or nothing. The limits
 * the lines name are locked first (in id order, so two imports cannot
 * deadlock); then every entry that would take its limit above the capacity
 * or below zero, given the accepted entries before it, is reported with its
 * line. Nothing is written once `errors` holds any line (this one's or an
 * earlier check's). Each touched limit's updated_at becomes the time of the
 * import's transaction (never earlier than it was), whatever time its
 * entries carry.
 */
export async function applyLedgerLines(
  tx: Queryable,
  orgId: string,
  errors: LineErrorList,
  maxErrors: number,
): Promise<LedgerCounts> {
  // Locked before the lines already recorded are set aside: a single entry
  // (draw/repay, HTTP) with one of the file's ids holds its limit until it
  // commits, so after this lock the lookup below sees it, and the INSERT
  // cannot then collide with it.
  await tx.query(
    `SELECT 1 FROM credit_limits WHERE id IN (SELECT limit_id FROM ${LEDGER_FIRST_TABLE}) ORDER BY id FOR UPDATE`,
  );
  await tx.query(
    `CREATE TEMP TABLE import_ledger_new ON COMMIT DROP AS
     SELECT f.line, f.id, f.kind, f.amount, coalesce(f.at, now()) AS at, f.limit_id, f.loan,
            CASE WHEN f.kind = 'drawdown' THEN f.amount ELSE -f.amount END AS delta
       FROM ${LEDGER_FIRST_TABLE} f
      WHERE NOT EXISTS (SELECT 1 FROM ledger_entries x WHERE x.org_id = $1 AND x.id = f.id COLLATE "default" OFFSET 0)`,
    [orgId],
  );
  const [counts] = await tx.query<{ distinct_ids: string; fresh: string }>(
    `SELECT (SELECT count(*) FROM ${LEDGER_FIRST_TABLE})::text AS distinct_ids, (SELECT count(*) FROM import_ledger_new)::text AS fresh`,
  );
  const applied = Number(counts?.fresh ?? 0);
  const unchanged = Number(counts?.distinct_ids ?? 0) - applied;
  // The lines already recorded must hold the same content. Checked after the
  // limits are locked and the new lines set aside, so that an entry recorded
  // concurrently in between is checked too, and only on the lines not new
  // (a first import probes no entry twice).
  // Staged ids are COLLATE "C", ledger_entries.id has the database's collation:
  // compared as they are, the (org_id, id) index cannot serve the lookup and
  // every line scanned all of the organization's entries (quadratic re-imports:
  // 5,000 lines took 22 s, 0.98 s with the index).
  if (unchanged > 0) {
    await collectLineErrors<{ line: string; id: string; kind: string; amount: string; limit_uid: string; at: string }>(
      tx,
      errors,
      maxErrors,
      `SELECT f.line, f.id, x.kind, x.amount::text AS amount, l.uid AS limit_uid,
              to_char(x.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at
         FROM (SELECT * FROM ${LEDGER_FIRST_TABLE} f WHERE NOT EXISTS (SELECT 1 FROM import_ledger_new n WHERE n.line = f.line)) f
         JOIN LATERAL (SELECT x.* FROM ledger_entries x WHERE x.org_id = $1 AND x.id = f.id COLLATE "default" OFFSET 0) x ON true
         JOIN credit_limits l ON l.id = x.limit_id
        WHERE (x.kind, x.limit_id, x.amount) IS DISTINCT FROM (f.kind, f.limit_id, f.amount)
           OR (f.at IS NOT NULL AND x.at <> f.at)`,
      [orgId],
      (row) => `ledger entry '${row.id}' already exists with different content (${row.kind} of ${row.amount} on ${row.limit_uid} at ${row.at})`,
    );
  }
  if (applied === 0) return { applied, unchanged };

  // Per limit, what the new lines move in all and the lowest and highest
  // their running sum reaches (file order): for a valid file, one pass finds
  // that no limit leaves [0, capacity] and gives the UPDATE its amounts.
  // Only the limits where the sum does leave it are walked line by line, so
  // that each overdraw is judged without the refused lines before it.
  await tx.query(
    `CREATE TEMP TABLE import_limit_moves ON COMMIT DROP AS
     SELECT limit_id, sum(delta) AS delta, min(reached) AS lowest, max(reached) AS highest
       FROM (SELECT limit_id, delta, sum(delta) OVER (PARTITION BY limit_id ORDER BY line) AS reached FROM import_ledger_new) r
      GROUP BY limit_id`,
  );
  await tx.query(
    `CREATE TEMP TABLE import_overdrawn ON COMMIT DROP AS
     SELECT m.limit_id FROM import_limit_moves m JOIN credit_limits l ON l.id = m.limit_id
      WHERE l.outstanding + m.lowest < 0 OR l.outstanding + m.highest > l.capacity`,
  );
  await reportOverdraws(tx, errors);
  if (errors.total > 0) return { applied: 0, unchanged };

  // Limit by limit, each limit's lines in file order (their seq, which breaks
  // ties between entries recorded together, keeps file order within a limit;
  // entries are only ever listed per limit). In file order, every entry's
  // two (org_id, limit_id, …) index keys landed on a random leaf page: this
  // order fills those leaves one after the other (1,000,000 entries: 10.2–10.9 s → 7.8–8.0 s).
  await tx.query(
    `INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, loan)
     SELECT $1, id, limit_id, kind, amount, at, loan FROM import_ledger_new ORDER BY limit_id, line`,
    [orgId],
  );
  await tx.query(
    `UPDATE credit_limits l
        SET outstanding = l.outstanding + m.delta, updated_at = greatest(l.updated_at, now())
       FROM import_limit_moves m
      WHERE l.id = m.limit_id`,
  );
  return { applied, unchanged };
}

const OVERDRAW_PAGE = 10_000;

interface WalkedLine {
  line: string;
  kind: string;
  amount: string;
  limit_id: string;
  uid: string;
  capacity: string;
  outstanding: string;
}

/**
 * Walks the ledger lines of the limits that some line would overdraw, in
 * file order per limit, a page at a time (memory stays bounded): each line
 * is checked against the limit as the accepted lines before it left it, and
 * a refused line is not counted further. Amounts are NUMERIC(15, 2), so
 * whole cents in a bigint are exact.
 */
async function reportOverdraws(tx: Queryable, errors: LineErrorList): Promise<void> {
  let after: [string, string] = ['0', '0'];
  let current: { limitId: string; outstanding: bigint } | undefined;
  for (;;) {
    const rows = await tx.query<WalkedLine>(
      `SELECT n.line::text AS line, n.kind, n.amount::text AS amount, n.limit_id::text AS limit_id, l.uid,
              l.capacity::text AS capacity, l.outstanding::text AS outstanding
         FROM import_ledger_new n JOIN import_overdrawn o ON o.limit_id = n.limit_id JOIN credit_limits l ON l.id = n.limit_id
        WHERE (n.limit_id, n.line) > ($1::bigint, $2::bigint)
        ORDER BY n.limit_id, n.line LIMIT ${OVERDRAW_PAGE}`,
      after,
    );
    for (const row of rows) {
      if (current?.limitId !== row.limit_id) current = { limitId: row.limit_id, outstanding: cents(row.outstanding) };
      const capacity = cents(row.capacity);
      const amount = cents(row.amount);
      const next = row.kind === 'drawdown' ? current.outstanding + amount : current.outstanding - amount;
      if (next >= 0n && next <= capacity) {
        current.outstanding = next;
        continue;
      }
      errors.add({
        line: Number(row.line),
        reason:
          row.kind === 'drawdown'
            ? `drawdown of ${row.amount} exceeds the balance of ${row.uid} at this point (balance ${decimal(capacity - current.outstanding)}, capacity ${row.capacity})`
            : `repayment of ${row.amount} exceeds the outstanding amount of ${row.uid} at this point (outstanding ${decimal(current.outstanding)})`,
      });
    }
    const last = rows[rows.length - 1];
    if (!last || rows.length < OVERDRAW_PAGE) return;
    after = [last.limit_id, last.line];
  }
}

/** `1200.50` → 120050n: NUMERIC(15, 2) text always has two decimals. */
function cents(text: string): bigint {
  return BigInt(text.replace('.', ''));
}

function decimal(cents: bigint): string {
  const sign = cents < 0n ? '-' : '';
  const digits = (cents < 0n ? -cents : cents).toString().padStart(3, '0');
  return `${sign}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}
