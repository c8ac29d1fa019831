import type { Queryable } from '../store/store.js';

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

/**
 * Claims an Idempotency-Key inside the transaction that will record the
 * entry (migration 010). The row is inserted first: a concurrent request
 * with the same key blocks on the primary key until this transaction ends,
 * then sees the committed row (and replays it) or, after a rollback, claims
 * the key itself. An expired row counts as absent and is taken over; a
 * live one is only locked, never changed.
 */
export async function claimIdempotencyKey(tx: Queryable, request: ClaimRequest): Promise<IdempotencyClaim> {
  const { orgId, idempotencyKey, fingerprint, keyId, ttlHours } = request;
  // A prune may delete the row between the two statements: then claim again.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const claimed = await tx.query(
      `INSERT INTO idempotency_keys (org_id, idempotency_key, request_fingerprint, key_id, expires_at)
       VALUES ($1, $2, $3, $4, now() + make_interval(hours => $5::int))
       ON CONFLICT (org_id, idempotency_key) DO UPDATE
          SET request_fingerprint = EXCLUDED.request_fingerprint, key_id = EXCLUDED.key_id,
              response_status = NULL, response_body = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
        WHERE idempotency_keys.expires_at <= now()
       RETURNING 1`,
      [orgId, idempotencyKey, fingerprint, keyId, ttlHours],
    );
    if (claimed.length > 0) return { kind: 'claimed' };
    const [first] = await tx.query<{ request_fingerprint: string; response_status: number | null; response_body: string | null }>(
      `SELECT request_fingerprint, response_status, response_body FROM idempotency_keys
        WHERE org_id = $1 AND idempotency_key = $2`,
      [orgId, idempotencyKey],
    );
    if (!first) continue;
    if (first.request_fingerprint !== fingerprint) return { kind: 'reused' };
    if (first.response_status === null || first.response_body === null) {
      throw new Error(`idempotency key row without a response outside its transaction (org ${orgId})`);
    }
    return { kind: 'replay', status: Number(first.response_status), body: first.response_body };
  }
  throw new Error('could not claim an idempotency key: it kept disappearing');
}

/** Stores the response of a claimed key, in the claiming transaction. */
export async function storeIdempotentResponse(tx: Queryable, ref: IdempotencyKeyRef, status: number, body: string): Promise<void> {
  await tx.query('UPDATE idempotency_keys SET response_status = $3, response_body = $4 WHERE org_id = $1 AND idempotency_key = $2', [
    ref.orgId,
    ref.idempotencyKey,
    status,
    body,
  ]);
}

/** Deletes every expired stored response (all organizations); resolves to how many. */
export async function pruneIdempotencyKeys(db: Queryable): Promise<number> {
  const [row] = await db.query<{ deleted: string }>(
    'WITH deleted AS (DELETE FROM idempotency_keys WHERE expires_at <= now() RETURNING 1) SELECT count(*)::text AS deleted FROM deleted',
  );
  return Number(row?.deleted ?? 0);
}
