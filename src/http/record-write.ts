import { createHash } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import { claimIdempotencyKey, storeIdempotentResponse } from '../ledger/idempotency-keys.js';
import { applyLedgerEntryIn, WAIT_FOR_SYNCHRONOUS_STANDBY, type LedgerResult } from '../ledger/apply-ledger-entry.js';
import { newLedgerId, type LedgerKind } from '../ledger/ledger-entry.js';
import { LedgerError } from '../ledger/ledger-error.js';
import { retrieveRecord } from '../listing/list-records.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import type { Store } from '../store/store.js';
import { problemDocument } from './problem.js';
import type { WriteBody } from './write-body.js';

export interface WriteRequest {
  readonly orgId: string;
  readonly keyId: string;
  readonly kind: LedgerKind;
  readonly limitUid: string;
  readonly body: WriteBody;
  readonly idempotencyKey: string;
  readonly requestId: string;
}

export interface WriteAnswer {
  readonly status: number;
  /** The JSON text sent (and stored for replays). */
  readonly body: string;
  /** True when this is the stored answer to an earlier request with the same key. */
  readonly replayed: boolean;
}

/** Refusals that are answers: stored under the key and replayed, like a 201. */
const STORED_REFUSALS = new Set(['insufficient_balance', 'repayment_exceeds_outstanding']);

/**
 * Records one HTTP drawdown or repayment exactly once per Idempotency-Key.
 * One transaction: claim the key (a concurrent request with the same key
 * waits here), apply the entry through the one ledger implementation, read
 * the limit after it, store the response, commit. A 409 refusal is stored
 * too (after rolling back to a savepoint), so a retry replays it rather
 * than succeeding later on a different balance. Anything else thrown (an
 * unknown limit, an `at` the database finds in the future, a database
 * error) rolls the whole transaction back: no row of the key is left, so a
 * retry runs afresh.
 */
export async function recordWrite(store: Store, limits: ResourceDefinition, request: WriteRequest, ttlHours: number): Promise<WriteAnswer> {
  const ref = { orgId: request.orgId, idempotencyKey: request.idempotencyKey };
  return store.transaction(async (tx) => {
    await tx.exec(WAIT_FOR_SYNCHRONOUS_STANDBY);
    const claim = await claimIdempotencyKey(tx, { ...ref, fingerprint: fingerprintOf(request), keyId: request.keyId, ttlHours });
    if (claim.kind === 'replay') return { status: claim.status, body: claim.body, replayed: true };
    if (claim.kind === 'reused') {
      throw new ApiError(
        'idempotency_key_reused',
        'this Idempotency-Key was already used for a different request (another limit, kind, amount, at or reference); use a new key for a new write',
      );
    }
    await tx.exec('SAVEPOINT ledger_entry');
    let answer: { status: number; body: string };
    try {
      const result = await applyLedgerEntryIn(tx, request.orgId, {
        kind: request.kind,
        id: newLedgerId(request.kind),
        limit: request.limitUid,
        amount: request.body.amount,
        at: request.body.at,
        keyId: request.keyId,
        reference: request.body.reference,
      });
      const limit = await retrieveRecord(tx, limits, request.orgId, request.limitUid);
      answer = { status: 201, body: JSON.stringify({ entry: entryJson(result), limit }) };
    } catch (error) {
      if (!(error instanceof LedgerError)) throw error;
      if (!STORED_REFUSALS.has(error.code)) throw toApiError(error);
      await tx.exec('ROLLBACK TO SAVEPOINT ledger_entry');
      const refusal = new ApiError(error.code as 'insufficient_balance' | 'repayment_exceeds_outstanding', error.message);
      answer = { status: refusal.status, body: JSON.stringify(problemDocument(refusal, request.requestId)) };
    }
    await storeIdempotentResponse(tx, ref, answer.status, answer.body);
    return { ...answer, replayed: false };
  });
}

/** The entry as `GET /api/limits/{uid}/entries/` shows it (the LedgerEntry schema; the limit is beside it in the answer). */
function entryJson(result: LedgerResult): Record<string, unknown> {
  return {
    id: result.id,
    kind: result.kind,
    amount: Number(result.amount),
    at: result.at,
    reference: result.reference,
    key_id: result.key_id,
    created_at: result.recorded_at,
  };
}

function toApiError(error: LedgerError): ApiError {
  if (error.code === 'limit_not_found') return new ApiError('not_found', error.message, { cause: error });
  if (error.code === 'invalid_entry') return ApiError.invalidBody([{ param: 'at', detail: error.message }]);
  return new ApiError('internal_error', 'an unexpected error occurred; quote the request_id when reporting it', { cause: error });
}

/**
 * What makes two requests "the same" for an Idempotency-Key: method, path
 * and the canonical body (so `1200`, `"1200.0"` and `1200.00` are one amount).
 */
function fingerprintOf(request: WriteRequest): string {
  const { amount, at, reference } = request.body;
  const canonical = JSON.stringify(['POST', `/api/limits/${request.limitUid}/${request.kind}s/`, amount, at ?? null, reference ?? null]);
  return createHash('sha256').update(canonical).digest('hex');
}
