import type { Queryable } from "../store/store.js";
import type { LineErrorList } from "./import-error.js";
import { collectLineErrors } from "./line-error-query.js";
import type { MergeCounts } from "./merge-records.js";
import { LEDGER_FIRST_TABLE, STAGING_TABLE } from "./staging.js";

/**
 * Loan lines (`{"object":"loan",…}`, SPEC §8): validated by the loans
 * definition's importLine like any record line, but merged here, because a
 * loan draws on its credit limit. Each batch's loan lines are set aside;
 * at the end (when every limit and method of the file is stored) each new
 * loan is inserted with its limit's entity and currency, and its outstanding
 * (principal − repaid) becomes a drawdown line of the loan's limit, placed at
 * the loan's line among the ledger lines: the ledger's overdraw rule,
 * all-or-nothing and idempotency (the entry's id is `loan:<uid>`) then apply
 * to it unchanged. A loan already stored with the same credit limit, payment
 * method, principal and reference is a no-op (its repayments since are the
 * ledger's); with other content, an error (an import does not change a loan).
 */
const LOAN_LINES_TABLE = "import_loan_lines";
const LOAN_FIRST_TABLE = "import_loan_first";
/** The organization's limits, methods and loans the loan lines name. */
const LOAN_LIMITS_TABLE = "import_loan_limits";
const LOAN_METHODS_TABLE = "import_loan_methods";
const LOANS_STORED_TABLE = "import_loans_stored";

/** The ledger id of an imported loan's drawdown. */
export const LOAN_DRAWDOWN_ID_PREFIX = "loan:";
const MAX_LOAN_UID_LENGTH = 255 - LOAN_DRAWDOWN_ID_PREFIX.length;

export const CREATE_LOAN_LINES_TABLE = `CREATE TEMP TABLE ${LOAN_LINES_TABLE} (
  line bigint NOT NULL,
  uid text COLLATE "C" NOT NULL,
  credit_limit text COLLATE "C" NOT NULL,
  payment_method text COLLATE "C" NOT NULL,
  principal numeric(15, 2) NOT NULL,
  repaid numeric(15, 2) NOT NULL,
  reference text,
  created_at timestamptz,
  updated_at timestamptz
) ON COMMIT DROP`;

/** Sets the batch's loan lines (of `object`) aside until the end. */
export async function stageLoanBatch(
  tx: Queryable,
  object: string,
): Promise<void> {
  await tx.query(
    `INSERT INTO ${LOAN_LINES_TABLE}
     SELECT line, uid, credit_limit, payment_method, principal, coalesce(repaid, 0), reference, created_at, updated_at
       FROM ${STAGING_TABLE} WHERE object = $1`,
    [object],
  );
}

/**
 * Once every batch is merged and before the ledger lines are applied:
 * reports what is wrong with the loan lines, inserts the new loans (only
 * when no line so far is invalid: the import will not commit otherwise) and
 * adds their drawdowns to the ledger's lines.
 */
export async function mergeLoans(
  tx: Queryable,
  orgId: string,
  errors: LineErrorList,
  maxErrors: number,
): Promise<MergeCounts> {
  await collectLineErrors<{ line: string; uid: string; first_line: string }>(
    tx,
    errors,
    maxErrors,
    `SELECT s.line, s.uid, f.line AS first_line
       FROM ${LOAN_LINES_TABLE} s JOIN (SELECT DISTINCT ON (uid) * FROM ${LOAN_LINES_TABLE} ORDER BY uid, line) f ON f.uid = s.uid AND f.line <> s.line
      WHERE (s.credit_limit, s.payment_method, s.principal, s.repaid, s.reference) IS DISTINCT FROM (f.credit_limit, f.payment_method, f.principal, f.repaid, f.reference)`,
    [],
    (row) =>
      `loan uid '${row.uid}' is used on line ${row.first_line} with different content`,
  );
  // Sharding-ready as in merge-records.ts (Citus cannot join a session's
  // temporary table with a distributed one): the uids the loan lines name
  // (array text) are looked up in the organization's rows alone, into
  // temporary tables of their own; the lines are matched with them there.
  const [named] = await tx.query<{
    limits: string | null;
    methods: string | null;
    loans: string | null;
  }>(
    `SELECT array_agg(DISTINCT credit_limit)::text AS limits, array_agg(DISTINCT payment_method)::text AS methods,
            array_agg(DISTINCT uid)::text AS loans
       FROM ${LOAN_LINES_TABLE}`,
  );
  await tx.query(
    `CREATE TEMP TABLE ${LOAN_LIMITS_TABLE} ON COMMIT DROP AS
     SELECT uid, id, entity, currency FROM credit_limits WHERE org_id = $1 AND uid = ANY ($2::text[])`,
    [orgId, named?.limits ?? "{}"],
  );
  await tx.query(
    `CREATE TEMP TABLE ${LOAN_METHODS_TABLE} ON COMMIT DROP AS
     SELECT uid, entity, currency FROM payment_methods WHERE org_id = $1 AND uid = ANY ($2::text[])`,
    [orgId, named?.methods ?? "{}"],
  );
  await tx.query(
    `CREATE TEMP TABLE ${LOANS_STORED_TABLE} ON COMMIT DROP AS
     SELECT uid, id, credit_limit, payment_method, principal, reference FROM loans WHERE org_id = $1 AND uid = ANY ($2::text[])`,
    [orgId, named?.loans ?? "{}"],
  );
  await tx.query(
    `CREATE TEMP TABLE ${LOAN_FIRST_TABLE} ON COMMIT DROP AS
     SELECT f.*, l.id AS limit_id, l.entity AS limit_entity, l.currency AS limit_currency,
            m.entity AS method_entity, m.currency AS method_currency, x.id AS existing_id,
            x.principal::text AS existing_principal, x.credit_limit AS existing_limit,
            (x.credit_limit, x.payment_method, x.principal, x.reference) IS NOT DISTINCT FROM (f.credit_limit, f.payment_method, f.principal, f.reference) AS same
       FROM (SELECT DISTINCT ON (uid) * FROM ${LOAN_LINES_TABLE} ORDER BY uid, line) f
       LEFT JOIN ${LOAN_LIMITS_TABLE} l ON l.uid = f.credit_limit
       LEFT JOIN ${LOAN_METHODS_TABLE} m ON m.uid = f.payment_method
       LEFT JOIN ${LOANS_STORED_TABLE} x ON x.uid = f.uid`,
  );
  await collectLineErrors<{ line: string; reason: string }>(
    tx,
    errors,
    maxErrors,
    `SELECT line, concat_ws('; ',
              CASE WHEN length(uid) > ${MAX_LOAN_UID_LENGTH} THEN 'uid of a loan must be at most ${MAX_LOAN_UID_LENGTH} characters' END,
              CASE WHEN repaid > principal THEN format('repaid %s exceeds the principal %s', repaid, principal) END,
              CASE WHEN method_entity <> limit_entity
                   THEN format('payment_method ''%s'' belongs to entity ''%s'', credit limit ''%s'' to entity ''%s''', payment_method, method_entity, credit_limit, limit_entity) END,
              CASE WHEN method_currency <> limit_currency
                   THEN format('payment_method ''%s'' is in %s, credit limit ''%s'' in %s', payment_method, method_currency, credit_limit, limit_currency) END,
              CASE WHEN existing_id IS NOT NULL AND NOT same
                   THEN format('loan ''%s'' already exists with different content (principal %s on %s); an import does not change a loan', uid, existing_principal, existing_limit) END
            ) AS reason
       FROM ${LOAN_FIRST_TABLE}
      WHERE length(uid) > ${MAX_LOAN_UID_LENGTH} OR repaid > principal OR method_entity <> limit_entity OR method_currency <> limit_currency
         OR (existing_id IS NOT NULL AND NOT same)`,
    [],
    (row) => row.reason,
  );
  const [counts] = await tx.query<{ fresh: string; unchanged: string }>(
    `SELECT count(*) FILTER (WHERE existing_id IS NULL)::text AS fresh, count(*) FILTER (WHERE existing_id IS NOT NULL AND same)::text AS unchanged
       FROM ${LOAN_FIRST_TABLE}`,
  );
  // Every fresh line is inserted (no ON CONFLICT: a uid stored meanwhile is a unique violation). A plain
  // INSERT … SELECT, not a counting modifying CTE around it: Citus refused that one ("cannot switch local
  // execution status …") in a transaction that had already used the coordinator's placement of a reference table.
  if (errors.total === 0) {
    await tx.query(
      `INSERT INTO loans (org_id, uid, entity, credit_limit, payment_method, currency, principal, outstanding, reference, created_at, updated_at)
       SELECT $1, uid, limit_entity, credit_limit, payment_method, limit_currency, principal, principal - repaid, reference,
              coalesce(created_at, now()), coalesce(updated_at, greatest(created_at, now()))
         FROM ${LOAN_FIRST_TABLE} WHERE existing_id IS NULL ORDER BY line`,
      [orgId],
    );
  }
  // The drawdowns of the new loans that are valid so far (a refused line must
  // not count in the overdraw check of the lines after it; a loan already stored drew when it was
  // created, by an import or over HTTP, and its repayments since are in the
  // ledger). Dated at the loan's created_at when that is given and not in
  // the future (a ledger entry's time never is), else at the import's time.
  await tx.query(
    `INSERT INTO ${LEDGER_FIRST_TABLE} (line, id, kind, amount, at, limit_uid, limit_id, loan)
     SELECT line, '${LOAN_DRAWDOWN_ID_PREFIX}' || uid, 'drawdown', principal - repaid, CASE WHEN created_at <= now() THEN created_at END,
            credit_limit, limit_id, uid
       FROM ${LOAN_FIRST_TABLE}
      WHERE existing_id IS NULL AND principal > repaid AND length(uid) <= ${MAX_LOAN_UID_LENGTH}
        AND method_entity = limit_entity AND method_currency = limit_currency
     ON CONFLICT (id) DO NOTHING`,
  );
  return {
    inserted: Number(counts?.fresh ?? 0),
    updated: 0,
    unchanged: Number(counts?.unchanged ?? 0),
  };
}
