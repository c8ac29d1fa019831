import type { Statement } from '../store/store.js';
import { TIMESTAMP_TEXT, type EntryWrite, type LimitView } from './entry-answer.js';
import { claimOfStored, type ClaimRequest, type LoneWriteEnd, type StoredRow } from './idempotency-keys.js';
import { RECORD_CHANGED_AT } from './record-changed-at.js';

/**
 * Lone drawdowns and repayments of one organization, each to its own credit
 * limit, written by set-based statements (ledger-writer.ts): one statement
 * locks their limits in uid order, one writes them all — the conditional
 * UPDATE of every limit, the INSERT of every entry, and the stored answer of
 * every key — so the limits' and entries' statement triggers (events, the
 * row versions) run once for the batch rather than once per write.
 *
 * Each write is gated, as a lone write is (LoneWrite), on its key having
 * been claimed by this transaction; a write that did not happen (refused,
 * dated in the future, a key an earlier request holds) writes nothing, its
 * claim is deleted, and it runs again the long way, which tells why.
 */
export interface JoinedEntry {
  readonly kind: 'entry';
  readonly view: LimitView;
  readonly write: EntryWrite;
}

/** The limits' row locks, in the order every transaction that locks several takes them (uid, "C" collation). */
export function lockLimitsStatement(orgId: string, limitUids: readonly string[]): Statement {
  return {
    sql: 'SELECT 1 FROM credit_limits t WHERE t.org_id = $1 AND t.uid = ANY ($2::text[]) ORDER BY t.uid FOR UPDATE',
    params: [orgId, [...limitUids]],
  };
}

const texts = new WeakMap<LimitView, string>();

/**
 * The statement that writes every entry of the batch and stores each
 * answer; one row per write, in the order given, with its key: `stored`
 * (and the answer's values, as storeAnswerRow's), or what an earlier
 * request stored under it, or neither (not written).
 * Parameters: $1 org id, then arrays: $2 limit uids, $3 amounts, $4 entry
 * ids, $5 kinds, $6 ats (NULL: now), $7 key ids, $8 references,
 * $9 Idempotency-Keys, $10 the status stored with each answer.
 * A write not made releases its claim in `released` (it runs again the long
 * way): a data-modifying CTE runs even unreferenced. (No SQL comment in the
 * text: the statement workload reads statements folded onto one line.)
 */
export function joinedEntriesText(view: LimitView): string {
  let text = texts.get(view);
  if (text) return text;
  const drawdown = "v.kind = 'drawdown'";
  // As entry-statements.ts: RETURNING holds stored columns only (Citus); the CTEs after it render them.
  text = `WITH v AS (
      SELECT * FROM unnest($2::text[], $3::numeric[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::text[])
        WITH ORDINALITY AS v (limit_uid, amount, entry_id, kind, at, key_id, reference, idempotency_key, n)
    ), claimed AS (
      SELECT v.* FROM v JOIN idempotency_keys k ON k.org_id = $1 AND k.idempotency_key = v.idempotency_key AND k.response_status IS NULL
    ), moved_row AS (
      UPDATE credit_limits t
         SET outstanding = CASE WHEN ${drawdown} THEN t.outstanding + v.amount ELSE t.outstanding - v.amount END,
             updated_at = ${RECORD_CHANGED_AT}
        FROM claimed v
       WHERE t.org_id = $1 AND t.uid = v.limit_uid
         AND CASE WHEN ${drawdown} THEN t.outstanding + v.amount <= t.capacity ELSE t.outstanding >= v.amount END
         AND (v.at IS NULL OR v.at <= now())
      RETURNING t.*, v.n AS joined_n
    ), inserted_row AS (
      INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at, key_id, reference)
      SELECT $1, v.entry_id, m.id, v.kind, v.amount, coalesce(v.at, now()), v.key_id, v.reference
        FROM moved_row m JOIN v ON v.n = m.joined_n
       ORDER BY v.n
      RETURNING id, kind, amount, at, key_id, reference, recorded_at
    ), answer AS (
      SELECT v.n, v.idempotency_key, to_jsonb(a) AS row FROM v
        JOIN inserted_row e ON e.id = v.entry_id
        JOIN moved_row t ON t.joined_n = v.n
       CROSS JOIN LATERAL (
         SELECT e.id AS entry_id, e.kind AS entry_kind, e.amount::text AS entry_amount,
                to_char(e.at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_at, e.key_id AS entry_key_id, e.reference AS entry_reference,
                to_char(e.recorded_at AT TIME ZONE 'UTC', ${TIMESTAMP_TEXT}) AS entry_recorded_at, ${view.columns}
       ) a
    ), ${joinedAnswersTail(10)}`;
  texts.set(view, text);
  return text;
}

/**
 * The end of a joined statement, after its CTEs `v` (every write: its
 * `idempotency_key` and its ordinal `n`) and `answer` (each write made: `n`,
 * `idempotency_key` and the answer's values, `row`): the answers stored under
 * their keys (status `$<statusParam>`), the claims of writes not made
 * released, and one row per write, in order (joinedEnds reads them).
 */
export function joinedAnswersTail(statusParam: number): string {
  return `stored AS (
      UPDATE idempotency_keys k SET response_status = $${statusParam}::smallint, response_row = answer.row
        FROM answer WHERE k.org_id = $1 AND k.idempotency_key = answer.idempotency_key AND k.response_status IS NULL
      RETURNING k.idempotency_key
    ), released AS (
      DELETE FROM idempotency_keys k USING v
       WHERE k.org_id = $1 AND k.idempotency_key = v.idempotency_key AND k.response_status IS NULL
         AND NOT EXISTS (SELECT 1 FROM answer WHERE answer.n = v.n)
      RETURNING 1
    )
    SELECT v.idempotency_key, EXISTS (SELECT 1 FROM stored s WHERE s.idempotency_key = v.idempotency_key) AS stored,
           answer.row AS answer, k.request_fingerprint, k.response_status, k.response_body, k.response_row
      FROM v LEFT JOIN answer ON answer.n = v.n
      LEFT JOIN idempotency_keys k ON k.org_id = $1 AND k.idempotency_key = v.idempotency_key AND k.response_status IS NOT NULL
     ORDER BY v.n`;
}

/** Each write's end, in the order of `claims`, from the rows of a statement that ends with joinedAnswersTail. */
export function joinedEnds(claims: readonly ClaimRequest[], rows: readonly unknown[]): LoneWriteEnd[] {
  return claims.map((claim, i) => {
    const row = rows[i] as (Partial<StoredRow> & { idempotency_key: string; stored: boolean; answer: Record<string, unknown> | null }) | undefined;
    if (row?.idempotency_key !== claim.idempotencyKey) throw new Error('joined writes: the rows are not in the order of the writes');
    if (row.stored && row.answer) return { kind: 'stored', row: row.answer };
    if (row.request_fingerprint) return claimOfStored(row as StoredRow, claim.fingerprint) as LoneWriteEnd;
    return { kind: 'not-written' };
  });
}

/** The statement for `writes` (one organization, distinct limits and keys) and how to read each write's end from its rows. */
export function joinedEntries(
  view: LimitView,
  orgId: string,
  writes: readonly { readonly write: EntryWrite; readonly claim: ClaimRequest }[],
  status: number,
): { statement: Statement; ends(rows: readonly unknown[]): LoneWriteEnd[] } {
  const column = <T>(pick: (write: EntryWrite, claim: ClaimRequest) => T) => writes.map(({ write, claim }) => pick(write, claim));
  return {
    statement: {
      sql: joinedEntriesText(view),
      params: [
        orgId,
        column((w) => w.limit),
        column((w) => w.amount),
        column((w) => w.id),
        column((w) => w.kind),
        column((w) => w.at ?? null),
        column((w) => w.keyId ?? null),
        column((w) => w.reference ?? null),
        column((_, c) => c.idempotencyKey),
        status,
      ],
    },
    ends: (rows) =>
      joinedEnds(
        writes.map(({ claim }) => claim),
        rows,
      ),
  };
}
