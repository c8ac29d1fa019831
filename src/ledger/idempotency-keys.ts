import type { Queryable, Transaction } from '../store/store.js';

/** What a write's Idempotency-Key found when it was claimed. */
export type IdempotencyClaim =
  /** First use (or the earlier use has expired): this request runs; its response is stored before commit. */
  | { kind: 'claimed' }
  /** A committed earlier request with the same key and fingerprint: answer its stored response. */
  | { kind: 'replay'; status: number; body: string }
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

/** Where the claim's values are among the parameters of the statement it is part of ($n). */
export interface ClaimParams {
  readonly orgId: number;
  readonly idempotencyKey: number;
  readonly fingerprint: number;
  readonly keyId: number;
  readonly ttlHours: number;
}

/**
 * Claims an Idempotency-Key inside the transaction that will record the
 * entry (migration 010), as a CTE (`idempotency_claimed`: one row when
 * claimed) of the statement that records it, so that statement can do its
 * work only `WHERE EXISTS (SELECT 1 FROM idempotency_claimed)`. The row is
 * inserted first: a concurrent request with the same key blocks on the
 * primary key until this transaction ends, then finds the committed row
 * (not claimed: ask claimedEarlier) or, after a rollback, claims the key
 * itself. An expired row counts as absent and is taken over; a live one is
 * only locked, never changed. The DO UPDATE reads the time from the row it
 * would have inserted (EXCLUDED.created_at: the transaction's now()): on a
 * distributed PostgreSQL (Citus) it may call no function that is not IMMUTABLE.
 */
export function claimIdempotencyKeyCte(p: ClaimParams): string {
  return `idempotency_claimed AS (
    INSERT INTO idempotency_keys (org_id, idempotency_key, request_fingerprint, key_id, created_at, expires_at)
    VALUES ($${p.orgId}, $${p.idempotencyKey}, $${p.fingerprint}, $${p.keyId}, now(), now() + make_interval(hours => $${p.ttlHours}::int))
    ON CONFLICT (org_id, idempotency_key) DO UPDATE
       SET request_fingerprint = EXCLUDED.request_fingerprint, key_id = EXCLUDED.key_id,
           response_status = NULL, response_body = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
     WHERE idempotency_keys.expires_at <= EXCLUDED.created_at
    RETURNING 1 AS claimed
  )`;
}

/**
 * What a key that the statement of claimIdempotencyKeyCte did not claim
 * holds: the earlier request's stored response. Read in a statement of its
 * own, which sees the row a concurrent request committed while the claim
 * waited for it. Undefined when the row has gone since (a prune): claim
 * again.
 */
export async function claimedEarlier(tx: Queryable, request: ClaimRequest): Promise<Exclude<IdempotencyClaim, { kind: 'claimed' }> | undefined> {
  const { orgId, idempotencyKey, fingerprint } = request;
  const [first] = await tx.query<{ request_fingerprint: string; response_status: number | null; response_body: string | null }>(
    `SELECT request_fingerprint, response_status, response_body FROM idempotency_keys
      WHERE org_id = $1 AND idempotency_key = $2`,
    [orgId, idempotencyKey],
  );
  if (!first) return undefined;
  if (first.request_fingerprint !== fingerprint) return { kind: 'reused' };
  if (first.response_status === null || first.response_body === null) {
    throw new Error(`idempotency key row without a response outside its transaction (org ${orgId})`);
  }
  return { kind: 'replay', status: Number(first.response_status), body: first.response_body };
}

const STORE_RESPONSE = 'UPDATE idempotency_keys SET response_status = $3, response_body = $4 WHERE org_id = $1 AND idempotency_key = $2';

/**
 * Stores the response of a claimed key as the claiming transaction's last
 * statement, sent with its COMMIT (one round trip for both): committed
 * together with the entry or not at all.
 */
export function storeIdempotentResponseAtCommit(tx: Transaction, ref: IdempotencyKeyRef, status: number, body: string): void {
  tx.queryAtCommit(STORE_RESPONSE, [ref.orgId, ref.idempotencyKey, status, body]);
}

export interface StoredResponse extends IdempotencyKeyRef {
  readonly status: number;
  readonly body: string;
}

/**
 * storeIdempotentResponseAtCommit for several keys claimed in one
 * transaction: one UPDATE of all their rows, sent with the COMMIT. Its text
 * depends only on how many (the values are parameters).
 */
export function storeIdempotentResponsesAtCommit(tx: Transaction, responses: readonly StoredResponse[]): void {
  const [only] = responses;
  if (responses.length === 1 && only) return storeIdempotentResponseAtCommit(tx, only, only.status, only.body);
  if (responses.length === 0) return;
  const rows = responses.map((_, i) => `($${4 * i + 1}::bigint, $${4 * i + 2}::text, $${4 * i + 3}::smallint, $${4 * i + 4}::text)`);
  tx.queryAtCommit(
    `UPDATE idempotency_keys k SET response_status = v.status, response_body = v.body
       FROM (VALUES ${rows.join(', ')}) AS v (org_id, idempotency_key, status, body)
      WHERE k.org_id = v.org_id AND k.idempotency_key = v.idempotency_key`,
    responses.flatMap((response) => [response.orgId, response.idempotencyKey, response.status, response.body]),
  );
}

/** Deletes every expired stored response (all organizations); resolves to how many. */
export async function pruneIdempotencyKeys(db: Queryable): Promise<number> {
  const [row] = await db.query<{ deleted: string }>(
    'WITH deleted AS (DELETE FROM idempotency_keys WHERE expires_at <= now() RETURNING 1) SELECT count(*)::text AS deleted FROM deleted',
  );
  return Number(row?.deleted ?? 0);
}
