import { ApiError } from '../domain/errors.js';
import { SYNCHRONOUS_STANDBY } from '../ledger/apply-ledger-entry.js';
import {
  claimedEarlier,
  claimIdempotencyKeyCte,
  storeIdempotentResponsesAtCommit,
  type ClaimRequest,
  type StoredResponse,
} from '../ledger/idempotency-keys.js';
import type { LoanOperation } from '../ledger/loan-operations.js';
import { DatabaseBudgetExceededError, type DatabaseBudget } from '../store/database-budget.js';
import { StoreUnavailableError, type Queryable, type Store, type Transaction } from '../store/store.js';
import { problemDocument } from './problem.js';
import type { WriteAnswer } from './record-write.js';
import { WriteCoalescer, type Settled } from './write-coalescer.js';

export interface LoanWriteRequest {
  readonly operation: LoanOperation;
  readonly idempotencyKey: string;
  readonly keyId: string;
  readonly requestId: string;
  readonly budget?: DatabaseBudget | undefined;
}

const CLAIM = `WITH ${claimIdempotencyKeyCte({ orgId: 1, idempotencyKey: 2, fingerprint: 3, keyId: 4, ttlHours: 5 })}
  SELECT EXISTS (SELECT 1 FROM idempotency_claimed) AS claimed`;
const DEADLOCK_DETECTED = '40P01';
const MAX_WRITES_PER_TRANSACTION = 32;

/**
 * Loan writes with the drawdowns' guarantees: per Idempotency-Key, the
 * claim and the write in one transaction whose stored answer is sent with
 * the COMMIT (a 409 refusal is stored and replayed too; a 404 or 422 rolls
 * back and stores nothing); writes of one lane (a limit for loan creations,
 * a loan for its repayments) queue behind the one in flight and then run
 * together in one transaction.
 */
export function coalescedLoanWrites(store: Store, ttlHours: number): WriteCoalescer<LoanWriteRequest, WriteAnswer> {
  return new WriteCoalescer<LoanWriteRequest, WriteAnswer>(
    {
      laneOf: (request) => request.operation.lane,
      conflictKeyOf: (request) => request.idempotencyKey,
      one: (request) => runAlone(store, request, ttlHours),
      many: (requests) => runTogether(store, requests, ttlHours),
      failsEveryRequest: (error) => error instanceof StoreUnavailableError,
      isOutOfTime: (error) => error instanceof StoreUnavailableError && error.cause instanceof DatabaseBudgetExceededError,
      timeLeft: (request) => request.budget?.remaining(),
      outOfTime: () => new StoreUnavailableError(new DatabaseBudgetExceededError(0)),
    },
    MAX_WRITES_PER_TRANSACTION,
  );
}

async function runAlone(store: Store, request: LoanWriteRequest, ttlHours: number): Promise<WriteAnswer> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await store.transaction(async (tx) => {
        const [settled] = await writeAll(tx, [request], ttlHours);
        if (!settled) throw new Error('a loan write settled nothing');
        if (!settled.ok) throw settled.error;
        return settled.value;
      }, { ...SYNCHRONOUS_STANDBY, budget: request.budget });
    } catch (error) {
      // The same request sent to two processes at once: one was rolled back; run it again, its key then replays.
      if (attempt === 0 && (error as { code?: unknown }).code === DEADLOCK_DETECTED) continue;
      throw error;
    }
  }
}

function runTogether(store: Store, requests: readonly LoanWriteRequest[], ttlHours: number): Promise<Settled<WriteAnswer>[]> {
  return store.transaction((tx) => writeAll(tx, requests, ttlHours), { ...SYNCHRONOUS_STANDBY, budget: requests[0]?.budget });
}

/** Each write in order in this transaction, then every new answer stored by one UPDATE sent with the COMMIT. */
async function writeAll(tx: Transaction, requests: readonly LoanWriteRequest[], ttlHours: number): Promise<Settled<WriteAnswer>[]> {
  const settled: Settled<WriteAnswer>[] = [];
  const stored: StoredResponse[] = [];
  for (const request of requests) {
    const claim: ClaimRequest = {
      orgId: request.operation.orgId,
      idempotencyKey: request.idempotencyKey,
      fingerprint: request.operation.fingerprint,
      keyId: request.keyId,
      ttlHours,
    };
    const answer = await writeOne(tx, request, claim);
    if (answer === 'reused') {
      settled.push({ ok: false, error: keyReused() });
      continue;
    }
    if (!answer.replayed) stored.push({ ...claim, status: answer.status, body: answer.body });
    settled.push({ ok: true, value: answer });
  }
  storeIdempotentResponsesAtCommit(tx, stored);
  return settled;
}

async function writeOne(tx: Queryable, request: LoanWriteRequest, claim: ClaimRequest): Promise<WriteAnswer | 'reused'> {
  // A prune may delete the row between the claim and the read of it: then claim again.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const [row] = await tx.query<{ claimed: boolean }>(CLAIM, [claim.orgId, claim.idempotencyKey, claim.fingerprint, claim.keyId, claim.ttlHours], { prepare: true });
    if (!row?.claimed) {
      const earlier = await claimedEarlier(tx, claim);
      if (!earlier) continue;
      if (earlier.kind === 'replay') return { status: earlier.status, body: earlier.body, replayed: true };
      return 'reused';
    }
    const outcome = await request.operation.apply(tx);
    if (outcome.ok) return { status: outcome.status, body: outcome.body, replayed: false };
    const refused = new ApiError(outcome.refusal.code, outcome.refusal.message);
    return { status: refused.status, body: JSON.stringify(problemDocument(refused, request.requestId)), replayed: false };
  }
  throw new Error('could not claim an idempotency key: it kept disappearing');
}

function keyReused(): ApiError {
  return new ApiError(
    'idempotency_key_reused',
    'this Idempotency-Key was already used for a different request (another loan, limit, method, amount or reference); use a new key for a new write',
  );
}
