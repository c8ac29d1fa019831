import type { Queryable, Statement, Transaction } from '../store/store.js';

/**
 * A stored answer: its text (a success answered the long way, or any answer
 * the previous release stored), or values: a lone write's answer
 * (storeAnswerRow), which the operation renders again
 * (LedgerOperation.renderStored), or — under a status of 400 or more — a
 * refusal's code and values (StoredRefusal), which the HTTP layer renders.
 */
export type StoredAnswer = { readonly body: string } | { readonly row: Record<string, unknown> };

/** What a write's Idempotency-Key found when it was claimed. */
export type IdempotencyClaim =
  /** First use (or the earlier use has expired): this request runs; its response is stored before commit. */
  | { kind: 'claimed' }
  /** A committed earlier request with the same key and fingerprint: answer its stored response. */
  | { kind: 'replay'; status: number; answer: StoredAnswer }
  /** The key was first used for another request. */
  | { kind: 'reused' };

export interface IdempotencyKeyRef {
  readonly orgId: string;
  readonly idempotencyKey: string;
}

export interface ClaimRequest extends IdempotencyKeyRef {
  /** SHA-256 (hex) of the method, path and canonical body. */
  readonly fingerprint: string;
  readonly keyId: string;
  /** How long the stored response is replayed. */
  readonly ttlHours: number;
}

/**
 * Claims the Idempotency-Keys of one transaction's writes (one organization)
 * in ONE statement, before the transaction locks anything else, and in key
 * order: two transactions that share keys wait for each other's keys in the
 * same order, and neither holds a row the other needs while it waits (the
 * lock order of ledger-operation.ts). A key another transaction holds makes
 * this wait until it ends; then its committed row is found (not claimed:
 * see the answers) or, after its rollback, claimed here. An expired row
 * counts as absent and is taken over; a live one is only locked, never changed.
 *
 * Resolves to each request's claim, in the order given. A key whose row is
 * deleted (a prune) between the claim and the read of it is claimed again.
 */
export async function claimIdempotencyKeys(tx: Queryable, orgId: string, requests: readonly ClaimRequest[]): Promise<IdempotencyClaim[]> {
  const claims = new Array<IdempotencyClaim | undefined>(requests.length);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const pending = requests.flatMap((request, i) => (claims[i] === undefined ? [i] : []));
    if (pending.length === 0) break;
    const claimed = await claimPending(
      tx,
      orgId,
      pending.map((i) => requests[i] as ClaimRequest),
    );
    const unclaimed = pending.filter((i) => !claimed.has((requests[i] as ClaimRequest).idempotencyKey));
    for (const i of pending) if (claimed.has((requests[i] as ClaimRequest).idempotencyKey)) claims[i] = { kind: 'claimed' };
    if (unclaimed.length === 0) break;
    const earlier = await storedResponses(
      tx,
      orgId,
      unclaimed.map((i) => (requests[i] as ClaimRequest).idempotencyKey),
    );
    for (const i of unclaimed) {
      const request = requests[i] as ClaimRequest;
      const row = earlier.get(request.idempotencyKey);
      if (!row) continue; // pruned since: claim it again
      claims[i] = claimOfStored(row, request.fingerprint);
    }
  }
  return claims.map((claim) => {
    if (!claim) throw new Error('could not claim an idempotency key: it kept disappearing');
    return claim;
  });
}

/**
 * The condition, in a statement run after claimKeysStatement in the same
 * transaction, that this transaction claimed the key `$<param>` of the
 * organization `$1`: a key's row without an answer is the claiming
 * transaction's own (outside it, every row has one).
 */
export function claimedKeyGate(param: number): string {
  return `EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.org_id = $1 AND k.idempotency_key = $${param} AND k.response_status IS NULL)`;
}

// The DO UPDATE reads the time from the row it would have inserted
// (EXCLUDED.created_at: the transaction's now()): on a distributed PostgreSQL
// (Citus, docs/scaling.md) it may call no function that is not IMMUTABLE.
const CLAIM_KEYS = `INSERT INTO idempotency_keys (org_id, idempotency_key, request_fingerprint, key_id, created_at, expires_at)
  SELECT $1, v.idempotency_key, v.fingerprint, v.key_id, now(), now() + make_interval(hours => v.ttl_hours)
    FROM unnest($2::text[], $3::text[], $4::text[], $5::int[]) AS v (idempotency_key, fingerprint, key_id, ttl_hours)
   ORDER BY v.idempotency_key COLLATE "C"
  ON CONFLICT (org_id, idempotency_key) DO UPDATE
     SET request_fingerprint = EXCLUDED.request_fingerprint, key_id = EXCLUDED.key_id,
         response_status = NULL, response_body = NULL, response_row = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
   WHERE idempotency_keys.expires_at <= EXCLUDED.created_at
  RETURNING idempotency_key`;

async function claimPending(tx: Queryable, orgId: string, requests: readonly ClaimRequest[]): Promise<Set<string>> {
  const { sql, params } = claimKeysStatement(orgId, requests);
  // A transaction's first statement: with its BEGIN, in one round trip.
  const rows = await tx.query<{ idempotency_key: string }>(sql, params, { prepare: true, sendWithBegin: true });
  return new Set(rows.map((row) => row.idempotency_key));
}

/**
 * The statement that claims the keys of one transaction's writes (one
 * organization, distinct keys), in key order, before it locks anything
 * else; it answers the keys it claimed. claimIdempotencyKeys runs it and
 * reads what the others hold; a transaction sent in one message (the
 * ledger writer's lone writes) runs it first and gates each write on its
 * key (claimedKeyGate).
 */
export function claimKeysStatement(orgId: string, requests: readonly ClaimRequest[]): Statement {
  return {
    sql: CLAIM_KEYS,
    params: [
      orgId,
      requests.map((request) => request.idempotencyKey),
      requests.map((request) => request.fingerprint),
      requests.map((request) => request.keyId),
      requests.map((request) => request.ttlHours),
    ],
  };
}

export interface StoredRow {
  request_fingerprint: string;
  response_status: number | null;
  response_body: string | null;
  response_row: Record<string, unknown> | null;
}

/** What a key held by an earlier (committed) request means for a request with `fingerprint`. */
export function claimOfStored(row: StoredRow, fingerprint: string): IdempotencyClaim {
  if (row.request_fingerprint !== fingerprint) return { kind: 'reused' };
  if (row.response_status === null || (row.response_body === null && row.response_row === null)) {
    throw new Error('idempotency key row without a response outside its transaction');
  }
  const answer = row.response_body === null ? { row: row.response_row as Record<string, unknown> } : { body: row.response_body };
  return { kind: 'replay', status: Number(row.response_status), answer };
}

/**
 * What keys the claim did not take hold: the earlier requests' stored
 * responses. A statement of its own, which sees the rows concurrent
 * transactions committed while the claim waited for them.
 */
async function storedResponses(tx: Queryable, orgId: string, keys: readonly string[]): Promise<Map<string, StoredRow>> {
  const rows = await tx.query<StoredRow & { idempotency_key: string }>(
    `SELECT idempotency_key, request_fingerprint, response_status, response_body, response_row FROM idempotency_keys
      WHERE org_id = $1 AND idempotency_key = ANY ($2::text[])`,
    [orgId, keys],
  );
  return new Map(rows.map((row) => [row.idempotency_key, row]));
}

const storeAnswerRowTexts = new Map<string, string>();

/** What the statement that ends a lone write found (storeAnswerRow). */
export type LoneWriteEnd =
  /** It wrote: its answer's values, stored under its key. */
  | { readonly kind: 'stored'; readonly row: Record<string, unknown> }
  /** It did not write because an earlier request holds the key: what that one stored (or that it was another request). */
  | (IdempotencyClaim & { readonly kind: 'replay' | 'reused' })
  /** It did not write (refused, a bad time): its claim was deleted; nothing was changed. */
  | { readonly kind: 'not-written' };

/**
 * The statement that ends a write whose key was claimed in the same
 * transaction (claimKeysStatement) and which was gated on that claim
 * (claimedKeyGate), run after it (in one message with it and the COMMIT:
 * Transaction.commitWith).
 * `answer` reads the write's answer values: one row when the write
 * happened, none otherwise; its $1 is the organization's id, which the
 * statement's own key lookup uses too (one organization: on a distributed
 * PostgreSQL, one shard). With a row, it is stored as the key's answer.
 * With none: if this transaction claimed the key, its claim is deleted, so
 * that the write can run again the long way (which stores a refusal's values);
 * if an earlier request holds the key (the claim waited for it to commit,
 * and locked its row), its stored answer is read, never changed.
 */
export function storeAnswerRow(answer: Statement, claim: ClaimRequest, status: number): { statement: Statement; end(rows: readonly unknown[]): LoneWriteEnd } {
  const n = answer.params.length;
  if (answer.params[0] !== claim.orgId) throw new Error("storeAnswerRow: the answer's $1 must be the organization's id");
  let sql = storeAnswerRowTexts.get(answer.sql);
  if (sql === undefined) {
    const key = `k.org_id = $1 AND k.idempotency_key = $${n + 1}`;
    // A key's row without an answer is this transaction's own claim (outside it, every row has one).
    sql = `WITH answer AS (SELECT to_jsonb(a) AS row FROM (${answer.sql}) a),
      stored AS (
        UPDATE idempotency_keys k SET response_status = $${n + 2}::smallint, response_row = answer.row
          FROM answer WHERE ${key} AND k.response_status IS NULL
        RETURNING 1
      ), released AS (
        DELETE FROM idempotency_keys k WHERE ${key} AND k.response_status IS NULL AND NOT EXISTS (SELECT 1 FROM answer)
        RETURNING 1
      ), held AS (
        SELECT k.request_fingerprint, k.response_status, k.response_body, k.response_row FROM idempotency_keys k
         WHERE ${key} AND k.response_status IS NOT NULL
      )
      SELECT EXISTS (SELECT 1 FROM stored) AS stored, (SELECT row FROM answer) AS answer, held.*
        FROM (SELECT 1) AS one LEFT JOIN held ON true`;
    storeAnswerRowTexts.set(answer.sql, sql);
  }
  return {
    statement: { sql, params: [...answer.params, claim.idempotencyKey, status] },
    end: (rows) => {
      const [row] = rows as (Partial<StoredRow> & { stored: boolean; answer: Record<string, unknown> | null })[];
      if (row?.stored && row.answer) return { kind: 'stored', row: row.answer };
      if (row?.request_fingerprint) return claimOfStored(row as StoredRow, claim.fingerprint) as LoneWriteEnd;
      return { kind: 'not-written' };
    },
  };
}

const STORE_RESPONSE = 'UPDATE idempotency_keys SET response_status = $3, response_body = $4, response_row = $5::jsonb WHERE org_id = $1 AND idempotency_key = $2';

export interface StoredResponse extends IdempotencyKeyRef {
  readonly status: number;
  /** A success's JSON text, or a refusal's values (a row: its code and values, rendered by the HTTP layer). */
  readonly answer: StoredAnswer;
}

function answerColumns(answer: StoredAnswer): [string | null, string | null] {
  return 'body' in answer ? [answer.body, null] : [null, JSON.stringify(answer.row)];
}

/**
 * Stores the answers of keys claimed in one transaction as its last
 * statement, sent with its COMMIT (one round trip for both): committed
 * together with the writes or not at all. One UPDATE of all their rows; its
 * text depends only on how many (the values are parameters).
 */
export function storeIdempotentResponsesAtCommit(tx: Transaction, responses: readonly StoredResponse[]): void {
  const [only] = responses;
  if (responses.length === 1 && only) {
    tx.queryAtCommit(STORE_RESPONSE, [only.orgId, only.idempotencyKey, only.status, ...answerColumns(only.answer)]);
    return;
  }
  if (responses.length === 0) return;
  const rows = responses.map((_, i) => `($${5 * i + 1}::bigint, $${5 * i + 2}::text, $${5 * i + 3}::smallint, $${5 * i + 4}::text, $${5 * i + 5}::jsonb)`);
  tx.queryAtCommit(
    `UPDATE idempotency_keys k SET response_status = v.status, response_body = v.body, response_row = v.row
       FROM (VALUES ${rows.join(', ')}) AS v (org_id, idempotency_key, status, body, row)
      WHERE k.org_id = v.org_id AND k.idempotency_key = v.idempotency_key`,
    responses.flatMap((response) => [response.orgId, response.idempotencyKey, response.status, ...answerColumns(response.answer)]),
  );
}

/** Deletes every expired stored response (all organizations); resolves to how many. */
export async function pruneIdempotencyKeys(db: Queryable): Promise<number> {
  const [row] = await db.query<{ deleted: string }>(
    'WITH deleted AS (DELETE FROM idempotency_keys WHERE expires_at <= now() RETURNING 1) SELECT count(*)::text AS deleted FROM deleted',
  );
  return Number(row?.deleted ?? 0);
}
