import type { Queryable } from '../store/store.js';
import { answerBody, resultOf, TIMESTAMP_TEXT, type EntryWrite, type LedgerResult, type LimitView, type RecordedEntry } from './entry-answer.js';
import type { Applied } from './ledger-operation.js';
import { LedgerError } from './ledger-error.js';

/** Why an entry was not recorded (a future time, an unknown limit, no room) and a caller's own id met again. */

export function futureTimeError(at: string): LedgerError {
  return new LedgerError('invalid_entry', `the entry's time ${at} is in the future; a ledger entry may be dated now or earlier`);
}

/** A caller's id already recorded: the same entry is answered as it stands now (nothing changes), another is an id_conflict. */
export async function existingEntry(tx: Queryable, limits: LimitView, write: EntryWrite): Promise<Applied<LedgerResult> | undefined> {
  const [row] = await tx.query<RecordedEntry & { limit: string; same: boolean }>(
    `SELECT e.kind, l.uid AS limit, e.amount::text AS amount, to_char(e.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at,
            e.key_id, e.reference, to_char(e.recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS recorded_at,
            (e.kind = $3 AND l.uid = $4 AND e.amount = $5::numeric AND ($6::timestamptz IS NULL OR e.at = $6::timestamptz)) AS same
       FROM ledger_entries e JOIN credit_limits l ON l.id = e.limit_id AND l.org_id = $1
      WHERE e.org_id = $1 AND e.id = $2`,
    [write.orgId, write.id, write.kind, write.limit, write.amount, write.at ?? null],
  );
  if (!row) return undefined;
  if (!row.same) {
    throw new LedgerError(
      'id_conflict',
      `ledger entry '${write.id}' already exists with different content (${row.kind} of ${row.amount} on ${row.limit} at ${row.at}); use a new id for a new entry`,
    );
  }
  const [limit] = await tx.query<Record<string, string | null>>(`SELECT ${limits.columns} FROM credit_limits t WHERE t.org_id = $1 AND t.uid = $2`, [
    write.orgId,
    write.limit,
  ]);
  if (!limit) throw new Error(`credit limit ${write.limit} of ledger entry ${write.id} vanished`);
  const entry: RecordedEntry = { id: write.id, kind: write.kind, amount: row.amount, at: row.at, key_id: row.key_id, reference: row.reference, recorded_at: row.recorded_at };
  return { ok: true, status: 200, body: answerBody(limits, entry, limit), value: resultOf(entry, false, limit) };
}

/** Why the conditional UPDATE matched no row: no such limit (thrown), or not enough room (read afresh, after the statement). */
export async function refusal(tx: Queryable, write: EntryWrite): Promise<LedgerError & { code: 'insufficient_balance' | 'repayment_exceeds_outstanding' }> {
  const [limit] = await tx.query<{ uid: string; capacity: string; outstanding: string; balance: string }>(
    'SELECT uid, capacity::text AS capacity, outstanding::text AS outstanding, balance::text AS balance FROM credit_limits WHERE org_id = $1 AND uid = $2',
    [write.orgId, write.limit],
  );
  if (!limit) throw new LedgerError('limit_not_found', `no credit limit '${write.limit}'`);
  const error =
    write.kind === 'drawdown'
      ? new LedgerError(
          'insufficient_balance',
          `drawdown of ${write.amount} refused: it exceeds the balance of ${limit.uid} (balance ${limit.balance}, capacity ${limit.capacity}, outstanding ${limit.outstanding}); nothing was changed`,
        )
      : new LedgerError(
          'repayment_exceeds_outstanding',
          `repayment of ${write.amount} refused: it exceeds the outstanding amount of ${limit.uid} (outstanding ${limit.outstanding}); nothing was changed`,
        );
  return error as LedgerError & { code: 'insufficient_balance' | 'repayment_exceeds_outstanding' };
}
