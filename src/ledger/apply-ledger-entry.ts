import type { Queryable, Store } from '../store/store.js';
import type { LedgerEntryInput } from './ledger-entry.js';
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

interface StoredEntry {
  amount: string;
  at: string;
  key_id: string | null;
  reference: string | null;
  recorded_at: string;
}

interface ExistingEntry extends StoredEntry {
  kind: string;
  limit: string;
  same: boolean;
}

const ENTRY_COLUMNS = `amount::text AS amount, to_char(at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at, key_id, reference,
  to_char(recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS recorded_at`;

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
      return await store.transaction(async (tx) => {
        await tx.exec(WAIT_FOR_SYNCHRONOUS_STANDBY);
        return applyLedgerEntryIn(tx, orgId, entry);
      });
    } catch (error) {
      // Lost the race to record this id: read the winner's entry and answer from it.
      if (error instanceof ConcurrentDuplicate && attempt === 0) continue;
      throw error;
    }
  }
}

/**
 * applyLedgerEntry inside a transaction the caller owns (and has set
 * WAIT_FOR_SYNCHRONOUS_STANDBY on): the HTTP writes record the entry and its
 * idempotency row in one transaction. A refusal throws a LedgerError having
 * changed nothing, so the caller may roll back to a savepoint and go on. A
 * lost race to record the same id throws; the caller must roll back.
 */
export async function applyLedgerEntryIn(tx: Queryable, orgId: string, entry: LedgerEntryInput): Promise<LedgerResult> {
  if (entry.at !== undefined) await refuseFutureTime(tx, entry.at);
  const existing = await findEntry(tx, orgId, entry);
  if (existing) return replay(tx, orgId, entry, existing);

  const delta = entry.kind === 'drawdown' ? 'outstanding + $3::numeric' : 'outstanding - $3::numeric';
  const guard = entry.kind === 'drawdown' ? 'outstanding + $3::numeric <= capacity' : 'outstanding >= $3::numeric';
  const [limit] = await tx.query<LimitState>(
    `UPDATE credit_limits SET outstanding = ${delta}, updated_at = ${RECORD_CHANGED_AT}
      WHERE org_id = $1 AND uid = $2 AND ${guard}
      RETURNING ${LIMIT_COLUMNS}`,
    [orgId, entry.limit, entry.amount],
  );
  if (!limit) throw await refusal(tx, orgId, entry);

  const inserted = await tx.query<StoredEntry>(
    `INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
     VALUES ($1, $2, $3, $4, $5::numeric, coalesce($6::timestamptz, now()), $7, $8)
     ON CONFLICT (org_id, id) DO NOTHING
     RETURNING ${ENTRY_COLUMNS}`,
    [orgId, entry.id, limit.id, entry.kind, entry.amount, entry.at ?? null, entry.keyId ?? null, entry.reference ?? null],
  );
  const row = inserted[0];
  if (!row) throw new ConcurrentDuplicate();
  return result(entry, row, true, limit);
}

/** An entry may be dated in the past, never after now (the database's clock). */
async function refuseFutureTime(tx: Queryable, at: string): Promise<void> {
  const [row] = await tx.query<{ future: boolean }>('SELECT $1::timestamptz > now() AS future', [at]);
  if (row?.future) throw new LedgerError('invalid_entry', `the entry's time ${at} is in the future; a ledger entry may be dated now or earlier`);
}

async function findEntry(tx: Queryable, orgId: string, entry: LedgerEntryInput): Promise<ExistingEntry | undefined> {
  const [row] = await tx.query<ExistingEntry>(
    `SELECT e.kind, l.uid AS limit, e.amount::text AS amount, to_char(e.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at,
            e.key_id, e.reference, to_char(e.recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS recorded_at,
            (e.kind = $3 AND l.uid = $4 AND e.amount = $5::numeric AND ($6::timestamptz IS NULL OR e.at = $6::timestamptz)) AS same
       FROM ledger_entries e JOIN credit_limits l ON l.id = e.limit_id
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

/** Why the conditional UPDATE matched no row: no such limit, or not enough room. */
async function refusal(tx: Queryable, orgId: string, entry: LedgerEntryInput): Promise<LedgerError> {
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

function result(entry: LedgerEntryInput, stored: StoredEntry, applied: boolean, limit: LimitState): LedgerResult {
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
