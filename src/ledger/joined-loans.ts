import { selectList } from '../listing/record-rendering.js';
import type { Statement } from '../store/store.js';
import type { ClaimRequest, LoneWriteEnd } from './idempotency-keys.js';
import { joinedAnswersTail, joinedEnds } from './joined-entries.js';
import { newLedgerId } from './ledger-entry.js';
import { newLoanUid, type LoanCreation, type LoanViews } from './loan-records.js';
import { RECORD_CHANGED_AT } from './record-changed-at.js';

/**
 * Lone loan creations of one organization, each on its own credit limit,
 * written as drawdowns are (joined-entries.ts): one statement moves every
 * limit (guarded as a loan alone is: the balance, and a payment method of
 * the limit's entity and currency), inserts every loan and every drawdown
 * entry of a principal, and stores each answer — so the limits', loans' and
 * entries' statement triggers run once for the batch. A loan not made
 * (refused, an unknown limit or method, a key an earlier request holds)
 * writes nothing, its claim is released, and it runs again the long way
 * (loan-operations.ts createLoan), which tells why.
 */
export interface JoinedLoan {
  readonly kind: 'loan';
  readonly views: LoanViews;
  readonly write: LoanCreation;
}

const texts = new WeakMap<LoanViews, string>();

/**
 * Parameters: $1 org id, then arrays: $2 limit uids, $3 payment method uids,
 * $4 principals, $5 loan uids, $6 references, $7 entry ids, $8 key ids,
 * $9 Idempotency-Keys; $10 the status stored with each answer. The answer
 * stored under a key: `{loan, limit}`, each the fields a GET selects.
 */
export function joinedLoansText(views: LoanViews): string {
  let text = texts.get(views);
  if (text) return text;
  // As loan-operations.ts: RETURNING holds stored columns only (Citus); the CTEs after it render them.
  text = `WITH v AS (
      SELECT * FROM unnest($2::text[], $3::text[], $4::numeric[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
        WITH ORDINALITY AS v (limit_uid, method_uid, principal, loan_uid, reference, entry_id, key_id, idempotency_key, n)
    ), claimed AS (
      SELECT v.n, v.limit_uid, v.principal, m.entity AS method_entity, m.currency AS method_currency FROM v
        JOIN idempotency_keys k ON k.org_id = $1 AND k.idempotency_key = v.idempotency_key AND k.response_status IS NULL
        JOIN payment_methods m ON m.org_id = $1 AND m.uid = v.method_uid
    ), moved_row AS (
      UPDATE credit_limits t SET outstanding = t.outstanding + v.principal, updated_at = ${RECORD_CHANGED_AT}
        FROM claimed v
       WHERE t.org_id = $1 AND t.uid = v.limit_uid AND t.outstanding + v.principal <= t.capacity
         AND t.entity = v.method_entity AND t.currency = v.method_currency
      RETURNING t.*, v.n AS joined_n
    ), created_row AS (
      INSERT INTO loans AS t (org_id, uid, entity, credit_limit, payment_method, currency, principal, outstanding, reference, created_at, updated_at)
      SELECT $1, v.loan_uid, m.entity, v.limit_uid, v.method_uid, m.currency, v.principal, v.principal, v.reference, now(), now()
        FROM moved_row m JOIN v ON v.n = m.joined_n
       ORDER BY v.n
      RETURNING t.*
    ), entry_row AS (
      INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference, loan)
      SELECT $1, v.entry_id, m.id, 'drawdown', v.principal, now(), v.key_id, v.reference, v.loan_uid
        FROM moved_row m JOIN v ON v.n = m.joined_n
       ORDER BY v.n
      RETURNING id
    ), answer AS (
      SELECT v.n, v.idempotency_key, jsonb_build_object('loan', to_jsonb(l), 'limit', to_jsonb(t)) AS row FROM v
        JOIN entry_row e ON e.id = v.entry_id
        JOIN created_row c ON c.uid = v.loan_uid
        JOIN moved_row m ON m.joined_n = v.n
       CROSS JOIN LATERAL (SELECT ${selectList(views.loans, 'c')}) l
       CROSS JOIN LATERAL (SELECT ${selectList(views.limits, 'm')}) t
    ), ${joinedAnswersTail(10)}`;
  texts.set(views, text);
  return text;
}

/**
 * The statement for `loans` (one organization, distinct limits and keys),
 * the records each would create (for their events' causes), and how to read
 * each loan's end from the statement's rows. The loans' uids and entries'
 * ids are new for each statement.
 */
export function joinedLoans(
  views: LoanViews,
  orgId: string,
  loans: readonly { readonly write: LoanCreation; readonly claim: ClaimRequest }[],
  status: number,
): { statement: Statement; objects: Record<string, string>[]; ends(rows: readonly unknown[]): LoneWriteEnd[] } {
  const made = loans.map(({ write, claim }) => ({ write, claim, uid: newLoanUid(), entryId: newLedgerId('drawdown') }));
  return {
    statement: {
      sql: joinedLoansText(views),
      params: [
        orgId,
        made.map(({ write }) => write.creditLimit),
        made.map(({ write }) => write.paymentMethod),
        made.map(({ write }) => write.principal),
        made.map(({ uid }) => uid),
        made.map(({ write }) => write.reference ?? null),
        made.map(({ entryId }) => entryId),
        made.map(({ write }) => write.keyId ?? null),
        made.map(({ claim }) => claim.idempotencyKey),
        status,
      ],
    },
    objects: made.map(({ write, uid, entryId }) => ({ credit_limit: write.creditLimit, loan: uid, ledger_entry: entryId })),
    ends: (rows) =>
      joinedEnds(
        made.map(({ claim }) => claim),
        rows,
      ),
  };
}
