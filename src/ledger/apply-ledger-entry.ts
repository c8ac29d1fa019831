import type { Queryable, Store, TransactionOptions } from '../store/store.js';
import type { LedgerEntryInput, LedgerKind } from './ledger-entry.js';
import { LedgerError } from './ledger-error.js';

const TIMESTAMP_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

export interface LedgerResult {
  readonly id: string;
  readonly kind: LedgerEntryInput['kind'];
  readonly limit: string;
  readonly amount: string;
  readonly at: string;
  readonly key_id: string | null;
  readonly reference: string | null;
  /** When the entry was recorded (the transaction's time). */
  readonly recorded_at: string;
  /** False when the same entry had already been recorded: nothing changed. */
  readonly applied: boolean;
  readonly capacity: string;
  readonly outstanding: string;
  readonly balance: string;
  readonly updated_at: string;
}

interface LimitState {
  id: string;
  uid: string;
  capacity: string;
  outstanding: string;
  balance: string;
  updated_at: string;
}

/** An entry as recorded (its columns as text). */
export interface RecordedEntry {
  amount: string;
  at: string;
  key_id: string | null;
  reference: string | null;
  recorded_at: string;
}

interface ExistingEntry extends RecordedEntry {
  kind: string;
  limit: string;
  same: boolean;
}

/** Prefixed: they sit beside the limit's columns in one row. */
const ENTRY_COLUMNS = `amount::text AS entry_amount, to_char(at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_at, key_id AS entry_key_id,
  reference AS entry_reference, to_char(recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_recorded_at`;

const LIMIT_COLUMNS = `id::text AS id, uid, capacity::text AS capacity, outstanding::text AS outstanding,
  balance::text AS balance, to_char(updated_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS updated_at`;

/**
 * A limit's updated_at after an entry: the time its stored row changed (the
 * transaction's time), never earlier than it was. Not the entry's own `at`,
 * which may lie in the past: a client syncing with `updated_from` would
 * never see a change stamped before its last sync.
 */
export const RECORD_CHANGED_AT = 'greatest(updated_at, now())';

/**
 * A recorded entry returns success only once the synchronous standby (if the
 * primary names one in synchronous_standby_names) has applied it, so a node
 * reading that standby never shows a stale balance (docs/scaling.md). Per
 * transaction: the primary's other writes keep synchronous_commit = local.
 */
export const WAIT_FOR_SYNCHRONOUS_STANDBY = 'SET LOCAL synchronous_commit = remote_apply';
/** The same, as the options of a transaction that records entries: set with its BEGIN, in one round trip. */
export const SYNCHRONOUS_STANDBY: TransactionOptions = { synchronousCommit: 'remote_apply' };

/** Signals that a concurrent transaction recorded the same id first. */
class ConcurrentDuplicate extends Error {}

/**
 * Records a drawdown or repayment and moves the limit's outstanding amount,
 * atomically.
 *
 * Concurrency design: the balance check and the change are ONE conditional
 * UPDATE (`… SET outstanding = outstanding + x WHERE outstanding + x <=
 * capacity`). Under READ COMMITTED a concurrent writer of the same row makes
 * this statement wait, then re-evaluate its WHERE against the committed row
 * version, so two drawdowns can never both pass a check made on a stale
 * value: no lost update, no overdraw, and no SERIALIZABLE retry loop. The
 * table's CHECK (0 <= outstanding <= capacity) is the last line of defence.
 * Locks are always taken limit row first, then ledger key (the import does
 * the same), so the two paths cannot deadlock each other.
 *
 * Idempotent by id: an entry already recorded with the same content is a
 * no-op that reports the limit as it is now; with different content it is an
 * `id_conflict`.
 */
export async function applyLedgerEntry(store: Store, orgId: string, entry: LedgerEntryInput): Promise<LedgerResult> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await store.transaction((tx) => applyLedgerEntryIn(tx, orgId, entry), SYNCHRONOUS_STANDBY);
    } catch (error) {
      // Lost the race to record this id: read the winner's entry and answer from it.
      if (error instanceof ConcurrentDuplicate && attempt === 0) continue;
      throw error;
    }
  }
}

/**
 * applyLedgerEntry's transaction (opened with SYNCHRONOUS_STANDBY). A
 * refusal throws a LedgerError having changed nothing. A lost race to
 * record the same id throws, and the transaction rolls back.
 */
async function applyLedgerEntryIn(tx: Queryable, orgId: string, entry: LedgerEntryInput): Promise<LedgerResult> {
  if (entry.at !== undefined) await refuseFutureTime(tx, entry.at);
  const existing = await findEntry(tx, orgId, entry);
  if (existing) return replay(tx, orgId, entry, existing);

  const [row] = await tx.query<LedgerStatementRow & LimitState>(
    `WITH ${ledgerEntryCtes(entry.kind, LIMIT_COLUMNS, '')} ${LEDGER_OUTCOME_SELECT}`,
    ledgerEntryParams(orgId, entry),
    { prepare: true },
  );
  const entryRow = ledgerOutcome(row, entry);
  if (!row || !entryRow) throw await refusal(tx, orgId, entry);
  return result(entry, entryRow, true, row);
}

/** What the statement of ledgerEntryCtes + LEDGER_OUTCOME_SELECT answers: the limit's chosen columns, and the entry's. */
export interface LedgerStatementRow {
  /** The entry's `at` lies after the database's now: nothing was changed. */
  readonly future: boolean;
  readonly entry_amount: string | null;
  readonly entry_at: string | null;
  readonly entry_key_id: string | null;
  readonly entry_reference: string | null;
  readonly entry_recorded_at: string | null;
  /** The limit's row id: NULL when the conditional UPDATE matched nothing (no such limit, a refusal, or not run). */
  readonly limit_row_id: string | null;
}

/** The parameters $1–$8 of ledgerEntryCtes, in order. */
export function ledgerEntryParams(orgId: string, entry: LedgerEntryInput): unknown[] {
  return [orgId, entry.limit, entry.amount, entry.id, entry.kind, entry.at ?? null, entry.keyId ?? null, entry.reference ?? null];
}

/**
 * The ledger rules as the CTEs of one statement (`WITH <these>, … SELECT`):
 * the conditional UPDATE of the limit (see applyLedgerEntry) and, only when
 * it matched, the INSERT of the entry. One round trip for both; a refusal is
 * an UPDATE of no row, which raises nothing and changes nothing. Parameters:
 * $1 org id, $2 limit uid, $3 amount, $4 entry id, $5 kind, $6 at (NULL:
 * now), $7 key id, $8 reference (ledgerEntryParams). `limitColumns` are
 * returned from the updated row (`t`); `gate` is an extra condition of the
 * UPDATE (`AND …`), e.g. that the statement's other CTEs claimed something.
 * An entry dated after now updates nothing (LEDGER_OUTCOME_SELECT says so),
 * and an id already recorded inserts nothing while the limit moved: both
 * leave the caller to throw, rolling the transaction back.
 */
export function ledgerEntryCtes(kind: LedgerKind, limitColumns: string, gate: string): string {
  const delta = kind === 'drawdown' ? 't.outstanding + $3::numeric' : 't.outstanding - $3::numeric';
  const guard = kind === 'drawdown' ? 't.outstanding + $3::numeric <= t.capacity' : 't.outstanding >= $3::numeric';
  // The writes RETURN stored columns only, and the columns are turned into
  // text (to_char, …) in CTEs that read them: on a distributed PostgreSQL
  // (Citus, docs/scaling.md) the RETURNING of a write to a sharded table may
  // hold no function that is not IMMUTABLE.
  return `ledger_moved_row AS (
    UPDATE credit_limits t SET outstanding = ${delta}, updated_at = ${RECORD_CHANGED_AT}
     WHERE t.org_id = $1 AND t.uid = $2 AND ${guard} AND ($6::timestamptz IS NULL OR $6::timestamptz <= now()) ${gate}
     RETURNING t.*
  ), ledger_moved AS (
    SELECT t.id AS limit_row_id, ${limitColumns} FROM ledger_moved_row t
  ), ledger_inserted_row AS (
    INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
    SELECT $1, $4, limit_row_id, $5, $3::numeric, coalesce($6::timestamptz, now()), $7, $8 FROM ledger_moved
    ON CONFLICT (org_id, id) DO NOTHING
    RETURNING amount, at, key_id, reference, recorded_at
  ), ledger_inserted AS (
    SELECT ${ENTRY_COLUMNS} FROM ledger_inserted_row
  )`;
}

/** The statement's answer: always one row (LedgerStatementRow), the limit's and the entry's columns NULL when absent. */
export const LEDGER_OUTCOME_SELECT = `SELECT coalesce($6::timestamptz > now(), false) AS future, ledger_moved.*, ledger_inserted.*
  FROM (SELECT 1) AS one LEFT JOIN ledger_moved ON true LEFT JOIN ledger_inserted ON true`;

/**
 * The entry the statement recorded, or undefined when the limit did not
 * move (a refusal or no such limit: ask refusal()). Throws when the entry's
 * time is in the future, and when the limit moved but the id was taken by a
 * concurrent transaction (ConcurrentDuplicate: roll back).
 */
export function ledgerOutcome(row: LedgerStatementRow | undefined, entry: LedgerEntryInput): RecordedEntry | undefined {
  if (row?.future) throw futureTimeError(entry.at ?? '');
  if (!row || row.limit_row_id === null) return undefined;
  if (row.entry_amount === null || row.entry_at === null || row.entry_recorded_at === null) throw new ConcurrentDuplicate();
  return { amount: row.entry_amount, at: row.entry_at, key_id: row.entry_key_id, reference: row.entry_reference, recorded_at: row.entry_recorded_at };
}

/** An entry may be dated in the past, never after now (the database's clock). */
async function refuseFutureTime(tx: Queryable, at: string): Promise<void> {
  const [row] = await tx.query<{ future: boolean }>('SELECT $1::timestamptz > now() AS future', [at]);
  if (row?.future) throw futureTimeError(at);
}

function futureTimeError(at: string): LedgerError {
  return new LedgerError('invalid_entry', `the entry's time ${at} is in the future; a ledger entry may be dated now or earlier`);
}

async function findEntry(tx: Queryable, orgId: string, entry: LedgerEntryInput): Promise<ExistingEntry | undefined> {
  const [row] = await tx.query<ExistingEntry>(
    `SELECT e.kind, l.uid AS limit, e.amount::text AS amount, to_char(e.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at,
            e.key_id, e.reference, to_char(e.recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS recorded_at,
            (e.kind = $3 AND l.uid = $4 AND e.amount = $5::numeric AND ($6::timestamptz IS NULL OR e.at = $6::timestamptz)) AS same
       FROM ledger_entries e JOIN credit_limits l ON l.id = e.limit_id AND l.org_id = $1
      WHERE e.org_id = $1 AND e.id = $2`,
    [orgId, entry.id, entry.kind, entry.limit, entry.amount, entry.at ?? null],
  );
  return row;
}

async function replay(tx: Queryable, orgId: string, entry: LedgerEntryInput, existing: ExistingEntry): Promise<LedgerResult> {
  if (!existing.same) {
    throw new LedgerError(
      'id_conflict',
      `ledger entry '${entry.id}' already exists with different content (${existing.kind} of ${existing.amount} on ${existing.limit} at ${existing.at}); use a new id for a new entry`,
    );
  }
  const [limit] = await tx.query<LimitState>(`SELECT ${LIMIT_COLUMNS} FROM credit_limits WHERE org_id = $1 AND uid = $2`, [
    orgId,
    entry.limit,
  ]);
  if (!limit) throw new Error(`credit limit ${entry.limit} of ledger entry ${entry.id} vanished`);
  return result(entry, existing, false, limit);
}

/** Why the conditional UPDATE matched no row: no such limit, or not enough room (read afresh, after the statement). */
export async function refusal(tx: Queryable, orgId: string, entry: LedgerEntryInput): Promise<LedgerError> {
  const [limit] = await tx.query<LimitState>(`SELECT ${LIMIT_COLUMNS} FROM credit_limits WHERE org_id = $1 AND uid = $2`, [
    orgId,
    entry.limit,
  ]);
  if (!limit) return new LedgerError('limit_not_found', `no credit limit '${entry.limit}'`);
  return entry.kind === 'drawdown'
    ? new LedgerError(
        'insufficient_balance',
        `drawdown of ${entry.amount} refused: it exceeds the balance of ${limit.uid} (balance ${limit.balance}, capacity ${limit.capacity}, outstanding ${limit.outstanding}); nothing was changed`,
      )
    : new LedgerError(
        'repayment_exceeds_outstanding',
        `repayment of ${entry.amount} refused: it exceeds the outstanding amount of ${limit.uid} (outstanding ${limit.outstanding}); nothing was changed`,
      );
}

function result(entry: LedgerEntryInput, stored: RecordedEntry, applied: boolean, limit: LimitState): LedgerResult {
  return {
    id: entry.id,
    kind: entry.kind,
    limit: limit.uid,
    amount: stored.amount,
    at: stored.at,
    key_id: stored.key_id,
    reference: stored.reference,
    recorded_at: stored.recorded_at,
    applied,
    capacity: limit.capacity,
    outstanding: limit.outstanding,
    balance: limit.balance,
    updated_at: limit.updated_at,
  };
}
