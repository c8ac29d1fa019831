import { createHash } from 'node:crypto';
import { ApiError, type ParamError } from '../domain/errors.js';
import { selectList, serializeRecord, type ApiRecord } from '../listing/record-rendering.js';
import type { Queryable } from '../store/store.js';
import { newLedgerId } from './ledger-entry.js';
import { LedgerError } from './ledger-error.js';
import type { Applied, LedgerOperation } from './ledger-operation.js';
import { newLoanUid, renderStoredLoan, type LoanCreation, type LoanResult, type LoanViews } from './loan-records.js';
import { RECORD_CHANGED_AT } from './record-changed-at.js';

export type { LoanCreation, LoanResult, LoanViews } from './loan-records.js';

const TIMESTAMP_TEXT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

export interface LoanRepayment {
  readonly orgId: string;
  readonly keyId?: string | undefined;
  /** uid of the loan. */
  readonly loan: string;
  readonly amount: string;
  readonly at?: string | undefined;
  readonly reference?: string | undefined;
}

/**
 * Loan writes are two more kinds of the ledger's writes (LedgerOperation):
 * the writer (ledger-writer.ts) gives them the drawdowns' queue,
 * Idempotency-Key, transaction and answers. Locks: the credit limit's row
 * first, then the loan's, as the writer's lock order requires.
 *
 * `POST /api/loans/`: in one statement, the limit's conditional UPDATE
 * (outstanding + principal ≤ capacity, and the payment method is of the
 * limit's entity and currency), the loan's INSERT and the drawdown entry
 * of its principal, linked to the loan — all or none of them. The balance
 * check is the drawdown's (see entry writes): under READ COMMITTED a
 * concurrent writer of the limit makes the UPDATE wait and re-check the row
 * as committed, so two loans never both pass on a stale balance. When
 * nothing moved, the reason is read afresh: no such limit or method (404),
 * another entity or currency (422), or the balance (409, stored). Keyed
 * loans on distinct limits go in one message (joined-loans.ts); a loan it
 * did not make runs this way, which tells why.
 */
export function loanCreation(views: LoanViews, write: LoanCreation): LedgerOperation<LoanResult> {
  return {
    orgId: write.orgId,
    // The limit's lane: loans and direct drawdowns of one limit queue together.
    lane: `${write.orgId}/${write.creditLimit}`,
    fingerprint: fingerprint(['POST', '/api/loans/', write.creditLimit, write.paymentMethod, write.principal, write.reference ?? null]),
    apply: (tx) => createLoan(tx, views, write),
    // With an Idempotency-Key: one message, with the lone writes of its organization that wait with it (joined-loans.ts).
    joinable: { kind: 'loan', views, write },
    renderStored: (row) => renderStoredLoan(views, row),
  };
}

/**
 * `POST /api/loans/{uid}/repayments/`: locks the loan's credit limit, then
 * in one statement lowers the loan's outstanding (if it covers the amount),
 * the limit's by the same amount (if it covers it: a direct repayment of the
 * limit may have left it below its loans') and records the repayment entry
 * linked to the loan. The repayment that brings the loan to zero makes it
 * repaid (its status follows outstanding, migration 014).
 */
export function loanRepayment(views: LoanViews, write: LoanRepayment): LedgerOperation<LoanResult> {
  return {
    orgId: write.orgId,
    lane: `${write.orgId}/loan/${write.loan}`,
    fingerprint: fingerprint(['POST', `/api/loans/${write.loan}/repayments/`, write.amount, write.at ?? null, write.reference ?? null]),
    apply: (tx) => repayLoan(tx, views, write),
  };
}

function fingerprint(canonical: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

type JsonRow = Record<string, string | null>;

interface CreationRow {
  readonly loan_row: JsonRow | null;
  readonly limit_row: JsonRow | null;
}

const creationStatements = new WeakMap<LoanViews, string>();

/** $1 org id, $2 limit uid, $3 method uid, $4 principal, $5 loan uid, $6 reference, $7 entry id, $8 key id. */
function creationStatement(views: LoanViews): string {
  let text = creationStatements.get(views);
  if (!text) {
    // The writes RETURN stored columns only and CTEs that read them turn them into text: on Citus
    // (docs/scaling.md) the RETURNING of a write to a distributed table may hold no function that is not IMMUTABLE.
    text = `WITH method AS (SELECT m.entity, m.currency FROM payment_methods m WHERE m.org_id = $1 AND m.uid = $3),
      moved_row AS (
        UPDATE credit_limits t SET outstanding = t.outstanding + $4::numeric, updated_at = ${RECORD_CHANGED_AT}
         WHERE t.org_id = $1 AND t.uid = $2 AND t.outstanding + $4::numeric <= t.capacity
           AND EXISTS (SELECT 1 FROM method WHERE method.entity = t.entity AND method.currency = t.currency)
         RETURNING t.*
      ), moved AS (
        SELECT t.id AS limit_row_id, t.entity AS limit_entity, t.currency AS limit_currency, ${selectList(views.limits, 't')} FROM moved_row t
      ), created_row AS (
        INSERT INTO loans AS t (org_id, uid, entity, credit_limit, payment_method, currency, principal, outstanding, reference, created_at, updated_at)
        SELECT $1, $5, limit_entity, $2, $3, limit_currency, $4::numeric, $4::numeric, $6, now(), now() FROM moved
        RETURNING t.*
      ), created AS (
        SELECT ${selectList(views.loans, 't')} FROM created_row t
      ), entry AS (
        INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference, loan)
        SELECT $1, $7, limit_row_id, 'drawdown', $4::numeric, now(), $8, $6, $5 FROM moved
        RETURNING 1
      )
      SELECT (SELECT to_json(created) FROM created) AS loan_row, (SELECT to_json(moved) FROM moved) AS limit_row`;
    creationStatements.set(views, text);
  }
  return text;
}

async function createLoan(tx: Queryable, views: LoanViews, write: LoanCreation): Promise<Applied<LoanResult>> {
  const uid = newLoanUid();
  const [row] = await tx.query<CreationRow>(
    creationStatement(views),
    [write.orgId, write.creditLimit, write.paymentMethod, write.principal, uid, write.reference ?? null, newLedgerId('drawdown'), write.keyId ?? null],
    { prepare: true },
  );
  if (row?.loan_row && row.limit_row) {
    const loan = serializeRecord(views.loans, row.loan_row);
    const limit = serializeRecord(views.limits, row.limit_row);
    return { ok: true, status: 201, body: JSON.stringify({ loan, limit }), value: { loan, limit } };
  }
  return { ok: false, refusal: await creationRefusal(tx, write) };
}

interface LimitState {
  uid: string;
  entity: string;
  currency: string;
  capacity: string;
  outstanding: string;
  balance: string;
}

/** Why the loan was not created, read after the statement: 404 and 422 are thrown (nothing to store), the 409 returned. */
async function creationRefusal(tx: Queryable, write: LoanCreation): Promise<LedgerError & { code: 'insufficient_balance' }> {
  const [found] = await tx.query<{ limit: LimitState | null; method: { uid: string; entity: string; currency: string } | null }>(
    `SELECT (SELECT to_json(l) FROM (SELECT uid, entity, currency, capacity::text AS capacity, outstanding::text AS outstanding, balance::text AS balance
                                       FROM credit_limits WHERE org_id = $1 AND uid = $2) l) AS limit,
            (SELECT to_json(m) FROM (SELECT uid, entity, currency FROM payment_methods WHERE org_id = $1 AND uid = $3) m) AS method`,
    [write.orgId, write.creditLimit, write.paymentMethod],
  );
  const limit = found?.limit;
  const method = found?.method;
  const missing = [
    ...(limit ? [] : [`no credit limit '${write.creditLimit}'`]),
    ...(method ? [] : [`no payment method '${write.paymentMethod}'`]),
  ];
  if (!limit || !method) throw new ApiError('not_found', `${missing.join(' and ')} in this organization; nothing was changed`);
  const mismatches: ParamError[] = [];
  if (method.entity !== limit.entity) {
    mismatches.push({
      param: 'payment_method',
      detail: `payment method '${method.uid}' belongs to entity '${method.entity}', but credit limit '${limit.uid}' to entity '${limit.entity}': a loan is paid out to its borrower`,
    });
  }
  if (method.currency !== limit.currency) {
    mismatches.push({
      param: 'payment_method',
      detail: `payment method '${method.uid}' is in ${method.currency}, but credit limit '${limit.uid}' in ${limit.currency}: the principal is paid out in the limit's currency`,
    });
  }
  if (mismatches.length > 0) throw ApiError.invalidBody(mismatches);
  return new LedgerError(
    'insufficient_balance',
    `loan of ${write.principal} refused: it exceeds the balance of ${limit.uid} (balance ${limit.balance}, capacity ${limit.capacity}, outstanding ${limit.outstanding}); nothing was changed`,
  ) as LedgerError & { code: 'insufficient_balance' };
}

interface RepaymentRow {
  readonly future: boolean;
  readonly loan_row: JsonRow | null;
  readonly limit_row: JsonRow | null;
  readonly entry_row: { amount: string; at: string; key_id: string | null; reference: string | null; recorded_at: string } | null;
}

const repaymentStatements = new WeakMap<LoanViews, string>();

/** $1 org id, $2 loan uid, $3 amount, $4 entry id, $5 at (NULL: now), $6 key id, $7 reference. */
function repaymentStatement(views: LoanViews): string {
  let text = repaymentStatements.get(views);
  if (!text) {
    // Stored columns only in each RETURNING, turned into text by the CTEs that read them (Citus: see above).
    text = `WITH repaid_row AS (
        UPDATE loans t SET outstanding = t.outstanding - $3::numeric, updated_at = ${RECORD_CHANGED_AT}
         WHERE t.org_id = $1 AND t.uid = $2 AND t.outstanding >= $3::numeric AND ($5::timestamptz IS NULL OR $5::timestamptz <= now())
           AND EXISTS (SELECT 1 FROM credit_limits c WHERE c.org_id = $1 AND c.uid = t.credit_limit AND c.outstanding >= $3::numeric)
         RETURNING t.*
      ), repaid AS (
        SELECT t.credit_limit AS loan_limit, ${selectList(views.loans, 't')} FROM repaid_row t
      ), moved_row AS (
        UPDATE credit_limits t SET outstanding = t.outstanding - $3::numeric, updated_at = ${RECORD_CHANGED_AT}
          FROM repaid WHERE t.org_id = $1 AND t.uid = repaid.loan_limit
         RETURNING t.*
      ), moved AS (
        SELECT t.id AS limit_row_id, ${selectList(views.limits, 't')} FROM moved_row t
      ), entry_row AS (
        INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference, loan)
        SELECT $1, $4, limit_row_id, 'repayment', $3::numeric, coalesce($5::timestamptz, now()), $6, $7, $2 FROM moved
        RETURNING amount, at, key_id, reference, recorded_at
      ), entry AS (
        SELECT amount::text AS amount, to_char(at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS at, key_id, reference,
               to_char(recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS recorded_at
          FROM entry_row
      )
      SELECT coalesce($5::timestamptz > now(), false) AS future, (SELECT to_json(repaid) FROM repaid) AS loan_row,
             (SELECT to_json(moved) FROM moved) AS limit_row, (SELECT to_json(entry) FROM entry) AS entry_row`;
    repaymentStatements.set(views, text);
  }
  return text;
}

async function repayLoan(tx: Queryable, views: LoanViews, write: LoanRepayment): Promise<Applied<LoanResult>> {
  // The loan's limit row first (the order every write takes): the statement
  // after it then reads the loan and the limit as the last writer left them.
  const [locked] = await tx.query<{ id: string }>(
    `SELECT c.id::text AS id FROM credit_limits c
      WHERE c.org_id = $1 AND c.uid = (SELECT l.credit_limit FROM loans l WHERE l.org_id = $1 AND l.uid = $2)
      FOR UPDATE`,
    [write.orgId, write.loan],
    { prepare: true },
  );
  if (!locked) throw new ApiError('not_found', `no loan '${write.loan}' in this organization; nothing was changed`);
  const entryId = newLedgerId('repayment');
  const [row] = await tx.query<RepaymentRow>(
    repaymentStatement(views),
    [write.orgId, write.loan, write.amount, entryId, write.at ?? null, write.keyId ?? null, write.reference ?? null],
    { prepare: true },
  );
  if (row?.future) throw ApiError.invalidBody([{ param: 'at', detail: `the entry's time ${write.at ?? ''} is in the future; a repayment may be dated now or earlier` }]);
  if (row?.loan_row && row.limit_row && row.entry_row) {
    const recorded = row.entry_row;
    const entry: ApiRecord = {
      id: entryId,
      kind: 'repayment',
      amount: Number(recorded.amount),
      at: recorded.at,
      reference: recorded.reference,
      loan: write.loan,
      key_id: recorded.key_id,
      created_at: recorded.recorded_at,
    };
    const loan = serializeRecord(views.loans, row.loan_row);
    const limit = serializeRecord(views.limits, row.limit_row);
    return { ok: true, status: 201, body: JSON.stringify({ entry, loan, limit }), value: { entry, loan, limit } };
  }
  return { ok: false, refusal: await repaymentRefusal(tx, write) };
}

async function repaymentRefusal(tx: Queryable, write: LoanRepayment): Promise<LedgerError & { code: 'repayment_exceeds_outstanding' }> {
  const [state] = await tx.query<{ loan_outstanding: string; limit_uid: string; limit_outstanding: string }>(
    `SELECT l.outstanding::text AS loan_outstanding, c.uid AS limit_uid, c.outstanding::text AS limit_outstanding
       FROM loans l JOIN credit_limits c ON c.org_id = l.org_id AND c.uid = l.credit_limit
      WHERE l.org_id = $1 AND l.uid = $2`,
    [write.orgId, write.loan],
  );
  if (!state) throw new ApiError('not_found', `no loan '${write.loan}' in this organization; nothing was changed`);
  const detail =
    Number(state.loan_outstanding) < Number(write.amount)
      ? `it exceeds the outstanding amount of loan ${write.loan} (outstanding ${state.loan_outstanding})`
      : `it exceeds the outstanding amount of its credit limit ${state.limit_uid} (outstanding ${state.limit_outstanding}), which direct repayments have lowered below the loan's`;
  return new LedgerError('repayment_exceeds_outstanding', `repayment of ${write.amount} refused: ${detail}; nothing was changed`) as LedgerError & {
    code: 'repayment_exceeds_outstanding';
  };
}
