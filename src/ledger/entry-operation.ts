import { hash } from 'node:crypto';
import type { Queryable } from '../store/store.js';
import { answerBody, renderStoredEntry, resultOf, type EntryWrite, type LedgerResult, type LimitView } from './entry-answer.js';
import { existingEntry, futureTimeError, refusal } from './entry-refusals.js';
import { entryParams, entryStatement, loneEntry } from './entry-statements.js';
import { RetryWrite, type Applied, type LedgerOperation } from './ledger-operation.js';

export { LIMIT_BALANCE_VIEW, limitViewOf, type EntryWrite, type LedgerResult, type LimitView } from './entry-answer.js';

/** The one row the entry statement answers: the limit's resource fields (NULL when it did not move) and the entry's columns. */
type EntryRow = Record<string, string | null> & {
  readonly future: boolean;
  readonly limit_row_id: string | null;
  readonly entry_amount: string | null;
  readonly entry_at: string | null;
  readonly entry_key_id: string | null;
  readonly entry_reference: string | null;
  readonly entry_recorded_at: string | null;
};

/**
 * A drawdown or repayment as a LedgerOperation: the limit's conditional
 * UPDATE and the entry's INSERT in one statement, answered 201 with the
 * entry and the limit after it (`limits` is the credit-limit resource, so
 * the limit reads as `GET /api/limits/{uid}/` shows it).
 *
 * Concurrency design: the balance check and the change are ONE conditional
 * UPDATE (`… SET outstanding = outstanding + x WHERE outstanding + x <=
 * capacity`). Under READ COMMITTED a concurrent writer of the same row makes
 * the statement wait, then re-evaluate its WHERE against the committed row
 * version, so two drawdowns can never both pass a check made on a stale
 * value: no lost update, no overdraw, no SERIALIZABLE retry loop. The
 * table's CHECK (0 <= outstanding <= capacity) is the last line of defence.
 * Locks: the limit's row, then the entry's key (the import does the same).
 */
export function entryOperation(limits: LimitView, write: EntryWrite): LedgerOperation<LedgerResult> {
  return {
    orgId: write.orgId,
    lane: `${write.orgId}/${write.limit}`,
    get fingerprint() {
      return fingerprintOf(write);
    },
    apply: (tx) => applyEntry(tx, limits, write),
    // A caller's own id may be recorded already: that is answered from what is stored, the long way.
    alone: write.idGivenByCaller ? undefined : (claim) => loneEntry(limits, write, claim),
    joinable: write.idGivenByCaller ? undefined : { kind: 'entry', view: limits, write },
    renderStored: (row) => renderStoredEntry(limits, row),
  };
}

/**
 * What makes two requests "the same" for an Idempotency-Key: method, path
 * and the canonical body (so `1200`, `"1200.0"` and `1200.00` are one amount).
 */
function fingerprintOf(write: EntryWrite): string {
  const canonical = JSON.stringify(['POST', `/api/limits/${write.limit}/${write.kind}s/`, write.amount, write.at ?? null, write.reference ?? null]);
  // One-shot hash: a quarter of the CPU of createHash().update().digest() for a string this short.
  return hash('sha256', canonical, 'hex');
}

async function applyEntry(tx: Queryable, limits: LimitView, write: EntryWrite): Promise<Applied<LedgerResult>> {
  if (write.idGivenByCaller) {
    const existing = await existingEntry(tx, limits, write);
    if (existing) return existing;
  }
  const [row] = await tx.query<EntryRow>(entryStatement(limits, write.kind), entryParams(write), { prepare: true });
  if (row?.future) throw futureTimeError(write.at ?? '');
  if (!row || row.limit_row_id === null) return { ok: false, refusal: await refusal(tx, write) };
  // The limit moved but the id was recorded by a concurrent transaction (only a caller's own id can be):
  // roll back and run again, which then finds that entry.
  if (row.entry_amount === null || row.entry_at === null || row.entry_recorded_at === null) throw new RetryWrite(`entry ${write.id} was recorded concurrently`);
  const entry = {
    id: write.id,
    kind: write.kind,
    amount: row.entry_amount,
    at: row.entry_at,
    key_id: row.entry_key_id,
    reference: row.entry_reference,
    recorded_at: row.entry_recorded_at,
  };
  return { ok: true, status: 201, body: answerBody(limits, entry, row), value: resultOf(entry, true, row) };
}

