import { TIMESTAMP_TEXT, type EntryWrite, type LimitView } from './entry-answer.js';
import { claimedKeyGate, type ClaimRequest } from './idempotency-keys.js';
import type { LedgerKind } from './ledger-entry.js';
import type { LoneWrite } from './ledger-operation.js';
import { RECORD_CHANGED_AT } from './record-changed-at.js';

/** The SQL of a drawdown or repayment: the statement of the long way, and the two of a write sent alone in one message. */

export function entryParams(write: EntryWrite): (string | null)[] {
  return [write.orgId, write.limit, write.amount, write.id, write.kind, write.at ?? null, write.keyId ?? null, write.reference ?? null];
}

const statements = new WeakMap<LimitView, Map<LedgerKind, string>>();

/**
 * One text per view and kind (a prepared statement): the conditional
 * UPDATE of the limit and, only when it matched, the INSERT of the entry;
 * always one row. A refusal is an UPDATE of no row, which raises nothing and
 * changes nothing. An entry dated after now updates nothing (`future`).
 * Parameters: $1 org id, $2 limit uid, $3 amount, $4 entry id, $5 kind,
 * $6 at (NULL: now), $7 key id, $8 reference.
 */
export function entryStatement(limits: LimitView, kind: LedgerKind): string {
  let byKind = statements.get(limits);
  if (!byKind) statements.set(limits, (byKind = new Map()));
  let text = byKind.get(kind);
  if (!text) {
    const delta = kind === 'drawdown' ? 't.outstanding + $3::numeric' : 't.outstanding - $3::numeric';
    const guard = kind === 'drawdown' ? 't.outstanding + $3::numeric <= t.capacity' : 't.outstanding >= $3::numeric';
    // The writes RETURN stored columns only; CTEs that read them turn them
    // into text (to_char, …): on a distributed PostgreSQL (Citus,
    // docs/scaling.md) the RETURNING of a write to a sharded table may hold
    // no function that is not IMMUTABLE.
    text = `WITH moved_row AS (
        UPDATE credit_limits t SET outstanding = ${delta}, updated_at = ${RECORD_CHANGED_AT}
         WHERE t.org_id = $1 AND t.uid = $2 AND ${guard} AND ($6::timestamptz IS NULL OR $6::timestamptz <= now())
         RETURNING t.*
      ), moved AS (
        SELECT t.id AS limit_row_id, ${limits.columns} FROM moved_row t
      ), inserted_row AS (
        INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
        SELECT $1, $4, limit_row_id, $5, $3::numeric, coalesce($6::timestamptz, now()), $7, $8 FROM moved
        ON CONFLICT (org_id, id) DO NOTHING
        RETURNING amount, at, key_id, reference, recorded_at
      ), inserted AS (
        SELECT amount::text AS entry_amount, to_char(at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_at, key_id AS entry_key_id,
          reference AS entry_reference, to_char(recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_recorded_at
          FROM inserted_row
      )
      SELECT coalesce($6::timestamptz > now(), false) AS future, moved.*, inserted.*
        FROM (SELECT 1) AS one LEFT JOIN moved ON true LEFT JOIN inserted ON true`;
    byKind.set(kind, text);
  }
  return text;
}

const loneStatements = new WeakMap<LimitView, { drawdown: string; repayment: string; answer: string }>();

/**
 * The entry as a LoneWrite. The write: gated on the key claimed earlier in
 * its transaction ($9, claimedKeyGate), the limit's conditional UPDATE and
 * the entry's INSERT; its id is new (no ON CONFLICT: a clash would raise
 * and stop the transaction before its COMMIT). The answer: the entry and
 * its limit, read after the write (the limit's row is locked by it until
 * the COMMIT, so the limit reads as the write left it), the columns
 * `renderStoredEntry` renders.
 */
export function loneEntry(limits: LimitView, write: EntryWrite, claim: ClaimRequest): LoneWrite {
  let texts = loneStatements.get(limits);
  if (!texts) {
    const writeText = (kind: LedgerKind) => {
      const delta = kind === 'drawdown' ? 't.outstanding + $3::numeric' : 't.outstanding - $3::numeric';
      const guard = kind === 'drawdown' ? 't.outstanding + $3::numeric <= t.capacity' : 't.outstanding >= $3::numeric';
      return `WITH moved AS (
          UPDATE credit_limits t SET outstanding = ${delta}, updated_at = ${RECORD_CHANGED_AT}
           WHERE t.org_id = $1 AND t.uid = $2 AND ${guard} AND ($6::timestamptz IS NULL OR $6::timestamptz <= now())
             AND ${claimedKeyGate(9)}
           RETURNING t.id
        ), inserted AS (
          INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
          SELECT $1, $4, moved.id, $5, $3::numeric, coalesce($6::timestamptz, now()), $7, $8 FROM moved
          RETURNING 1
        )
        SELECT EXISTS (SELECT 1 FROM inserted) AS written`;
    };
    const answer = `SELECT e.id AS entry_id, e.kind AS entry_kind, e.amount::text AS entry_amount,
        to_char(e.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_at, e.key_id AS entry_key_id, e.reference AS entry_reference,
        to_char(e.recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_recorded_at, ${limits.columns}
       FROM ledger_entries e JOIN credit_limits t ON t.org_id = e.org_id AND t.id = e.limit_id
      WHERE e.org_id = $1 AND t.org_id = $1 AND e.id = $2`;
    loneStatements.set(limits, (texts = { drawdown: writeText('drawdown'), repayment: writeText('repayment'), answer }));
  }
  return {
    write: { sql: texts[write.kind], params: [...entryParams(write), claim.idempotencyKey] },
    answerSelect: { sql: texts.answer, params: [write.orgId, write.id] },
    status: 201,
  };
}

