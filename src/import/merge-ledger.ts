import { changedAt } from '../ledger/record-changed-at.js';
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

// Sharding-ready as in merge-records.ts: a statement reads the import's
// temporary tables or the organization's rows (`org_id = $1`), never both;
// what one finds reaches the other as array text parameters or through
// INSERT … SELECT.

const LEDGER_OBJECTS = `('drawdown', 'repayment')`;

/** What the batches staged so far leave for the checks at the end. */
export interface LedgerStaging {
  /** Some limit a ledger line names was not found when its batch was staged. */
  unresolvedLimits: boolean;
  /**
   * The credit limits found so far, uid → id (a limit's id never changes),
   * so that a batch looks up only the limits no earlier batch found: a
   * file's lines name the same limits again and again. Only what was found
   * is kept (a limit not found may be defined by a later batch).
   */
  readonly limitIds: Map<string, string>;
}

export function newLedgerStaging(): LedgerStaging {
  return { unresolvedLimits: false, limitIds: new Map() };
}

/** Beyond this many remembered limits (about 100 MB), the memory starts over. */
const MAX_REMEMBERED_LIMITS = 1_000_000;

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
  limitUids: ReadonlySet<string>,
  staging: LedgerStaging,
  errors: LineErrorList,
  maxErrors: number,
): Promise<void> {
  // The batch's limits (`limitUids`, the ones its ledger lines name), looked
  // up in the organization's credit limits alone; then each line finds its
  // limit among them, in the temporary tables.
  const limits = await batchLimits(tx, orgId, limitUids, staging.limitIds);
  const [staged] = await tx.query<{ kept: string; unresolved: string }>(
    `WITH looked_up AS MATERIALIZED (
       SELECT s.line, s.uid, s.object, s.ledger_amount AS amount, s.ledger_at AS at, s.ledger_limit_uid AS limit_uid, l.id AS limit_id
         FROM ${STAGING_TABLE} s
         LEFT JOIN unnest($1::text[], $2::bigint[]) AS l (uid, id) ON l.uid = s.ledger_limit_uid
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
    [limits.uids, limits.ids],
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
  const [named] = await tx.query<{ uids: string | null }>(`SELECT array_agg(DISTINCT limit_uid)::text AS uids FROM ${LEDGER_UNRESOLVED_TABLE}`);
  const limits = await limitsByUid(tx, orgId, named?.uids ?? '{}');
  await tx.query(
    `UPDATE ${LEDGER_FIRST_TABLE} f SET limit_id = l.id
       FROM unnest($1::text[], $2::bigint[]) AS l (uid, id)
      WHERE f.limit_id IS NULL AND l.uid = f.limit_uid`,
    [limits.uids, limits.ids],
  );
  await collectLineErrors<{ line: string; limit_uid: string }>(
    tx,
    errors,
    maxErrors,
    `SELECT u.line, u.limit_uid FROM ${LEDGER_UNRESOLVED_TABLE} u WHERE u.limit_uid <> ALL ($1::text[])`,
    [limits.uids],
    (row) => `no credit limit '${row.limit_uid}' in this organization or this file`,
  );
}

/** The limits among `uids` that the organization has, as two arrays in the same order: from `known`, or looked up. */
async function batchLimits(tx: Queryable, orgId: string, uids: ReadonlySet<string>, known: Map<string, string>): Promise<{ uids: string[]; ids: string[] }> {
  const unknown = [...uids].filter((uid) => !known.has(uid));
  const found = new Map<string, string>();
  if (unknown.length > 0) {
    const rows = await tx.query<{ uid: string; id: string }>('SELECT uid, id::text AS id FROM credit_limits WHERE org_id = $1 AND uid = ANY ($2::text[])', [orgId, unknown]);
    for (const row of rows) found.set(row.uid, row.id);
  }
  const limits: { uids: string[]; ids: string[] } = { uids: [], ids: [] };
  for (const uid of uids) {
    const id = known.get(uid) ?? found.get(uid);
    if (id === undefined) continue;
    limits.uids.push(uid);
    limits.ids.push(id);
  }
  if (known.size + found.size > MAX_REMEMBERED_LIMITS) known.clear();
  for (const [uid, id] of found) known.set(uid, id);
  return limits;
}

/** The organization's credit limits among `uids` (array text), as two array texts in the same order. */
async function limitsByUid(tx: Queryable, orgId: string, uids: string): Promise<{ uids: string; ids: string }> {
  const [found] = await tx.query<{ uids: string | null; ids: string | null }>(
    `SELECT array_agg(uid)::text AS uids, array_agg(id)::text AS ids FROM credit_limits WHERE org_id = $1 AND uid = ANY ($2::text[])`,
    [orgId, uids],
  );
  return { uids: found?.uids ?? '{}', ids: found?.ids ?? '{}' };
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
  // cannot then collide with it. The locked limits' capacity and
  // outstanding amount are kept in a temporary table for the checks below.
  const [named] = await tx.query<{ ids: string | null }>(
    `SELECT array_agg(DISTINCT limit_id)::text AS ids FROM ${LEDGER_FIRST_TABLE} WHERE limit_id IS NOT NULL`,
  );
  const [locked] = await tx.query<{ ids: string | null; uids: string | null; capacities: string | null; outstandings: string | null }>(
    `SELECT array_agg(id)::text AS ids, array_agg(uid)::text AS uids,
            array_agg(capacity)::text AS capacities, array_agg(outstanding)::text AS outstandings
       FROM (SELECT id, uid, capacity, outstanding FROM credit_limits WHERE org_id = $1 AND id = ANY ($2::bigint[]) ORDER BY id FOR UPDATE) l`,
    [orgId, named?.ids ?? '{}'],
  );
  await tx.query(
    `CREATE TEMP TABLE import_locked_limits ON COMMIT DROP AS
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::numeric[], $4::numeric[]) AS l (id, uid, capacity, outstanding)`,
    [locked?.ids ?? '{}', locked?.uids ?? '{}', locked?.capacities ?? '{}', locked?.outstandings ?? '{}'],
  );
  // The file's entries already recorded, read from the organization's
  // entries alone (with their limit's uid, for the message below).
  await tx.query(`CREATE TEMP TABLE import_ledger_recorded (id text COLLATE "C" PRIMARY KEY, kind text, limit_id bigint, limit_uid text, amount numeric, at timestamptz) ON COMMIT DROP`);
  const [recordedBefore] = await tx.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM ledger_entries WHERE org_id = $1) AS any', [orgId]);
  if (recordedBefore?.any) {
    const [ids] = await tx.query<{ ids: string | null }>(`SELECT array_agg(id)::text AS ids FROM ${LEDGER_FIRST_TABLE}`);
    // The ids are compared in the entries' own collation, so the (org_id, id) index serves the lookup.
    await tx.query(
      `INSERT INTO import_ledger_recorded (id, kind, limit_id, limit_uid, amount, at)
       SELECT x.id, x.kind, x.limit_id, l.uid, x.amount, x.at
         FROM ledger_entries x JOIN credit_limits l ON l.org_id = $1 AND l.id = x.limit_id
        WHERE x.org_id = $1 AND x.id = ANY ($2::text[])`,
      [orgId, ids?.ids ?? '{}'],
    );
  }
  // Stored in the order the running sums and the INSERT read it (limit, then
  // file order): their sorts then find it sorted, a single pass each.
  await tx.query(
    `CREATE TEMP TABLE import_ledger_new ON COMMIT DROP AS
     SELECT f.line, f.id, f.kind, f.amount, coalesce(f.at, now()) AS at, f.limit_id, f.loan,
            CASE WHEN f.kind = 'drawdown' THEN f.amount ELSE -f.amount END AS delta
       FROM ${LEDGER_FIRST_TABLE} f
      WHERE NOT EXISTS (SELECT 1 FROM import_ledger_recorded x WHERE x.id = f.id)
      ORDER BY f.limit_id, f.line`,
  );
  const [counts] = await tx.query<{ distinct_ids: string; fresh: string }>(
    `SELECT (SELECT count(*) FROM ${LEDGER_FIRST_TABLE})::text AS distinct_ids, (SELECT count(*) FROM import_ledger_new)::text AS fresh`,
  );
  const applied = Number(counts?.fresh ?? 0);
  const unchanged = Number(counts?.distinct_ids ?? 0) - applied;
  // The lines already recorded must hold the same content. Checked after the
  // limits are locked and the new lines set aside, so that an entry recorded
  // concurrently in between is checked too.
  if (unchanged > 0) {
    await collectLineErrors<{ line: string; id: string; kind: string; amount: string; limit_uid: string; at: string }>(
      tx,
      errors,
      maxErrors,
      `SELECT f.line, f.id, x.kind, x.amount::text AS amount, x.limit_uid,
              to_char(x.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at
         FROM ${LEDGER_FIRST_TABLE} f JOIN import_ledger_recorded x ON x.id = f.id
        WHERE (x.kind, x.limit_id, x.amount) IS DISTINCT FROM (f.kind, f.limit_id, f.amount)
           OR (f.at IS NOT NULL AND x.at <> f.at)`,
      [],
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
     SELECT m.limit_id FROM import_limit_moves m JOIN import_locked_limits l ON l.id = m.limit_id
      WHERE l.outstanding + m.lowest < 0 OR l.outstanding + m.highest > l.capacity`,
  );
  const [overdrawn] = await tx.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM import_overdrawn) AS any');
  if (overdrawn?.any) await reportOverdraws(tx, errors);
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
  // In id order, the order the limits were stored in: the UPDATE then reads
  // their heap pages one after the other, and their new versions' keys land
  // side by side in the (org_id, id) and (org_id, updated_at, id) indexes
  // (50,000 limits: the UPDATE's backend CPU a third lower than in hash order).
  const [moves] = await tx.query<{ ids: string; deltas: string }>(
    'SELECT array_agg(limit_id ORDER BY limit_id)::text AS ids, array_agg(delta ORDER BY limit_id)::text AS deltas FROM import_limit_moves',
  );
  await tx.query(
    `UPDATE credit_limits l
        SET outstanding = l.outstanding + m.delta, updated_at = ${changedAt('l.updated_at')}
       FROM unnest($2::bigint[], $3::numeric[]) AS m (limit_id, delta)
      WHERE l.org_id = $1 AND l.id = m.limit_id`,
    [orgId, moves?.ids ?? '{}', moves?.deltas ?? '{}'],
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
         FROM import_ledger_new n JOIN import_overdrawn o ON o.limit_id = n.limit_id JOIN import_locked_limits l ON l.id = n.limit_id
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
