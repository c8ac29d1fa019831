import { createHash } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import {
  claimedEarlier,
  claimIdempotencyKeyCte,
  storeIdempotentResponseAtCommit,
  storeIdempotentResponsesAtCommit,
  type ClaimRequest,
  type StoredResponse,
} from '../ledger/idempotency-keys.js';
import {
  LEDGER_OUTCOME_SELECT,
  ledgerEntryCtes,
  ledgerEntryParams,
  ledgerOutcome,
  refusal,
  SYNCHRONOUS_STANDBY,
  type LedgerStatementRow,
  type RecordedEntry,
} from '../ledger/apply-ledger-entry.js';
import { newLedgerId, type LedgerEntryInput, type LedgerKind } from '../ledger/ledger-entry.js';
import { LedgerError } from '../ledger/ledger-error.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { serializeRecord } from '../listing/serialize.js';
import { selectList } from '../listing/sql.js';
import { StoreUnavailableError, type Queryable, type Store } from '../store/store.js';
import { DatabaseBudgetExceededError, type DatabaseBudget } from '../store/database-budget.js';
import { problemDocument } from './problem.js';
import type { WriteBody } from './write-body.js';
import { WriteCoalescer, type Settled } from './write-coalescer.js';

export interface WriteRequest {
  readonly orgId: string;
  readonly keyId: string;
  readonly kind: LedgerKind;
  readonly limitUid: string;
  readonly body: WriteBody;
  readonly idempotencyKey: string;
  readonly requestId: string;
  /** The request's database time: its transaction (or its batch's, when it runs first in one) must fit in it. */
  readonly budget?: DatabaseBudget | undefined;
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

/** The claim's parameters follow the ledger's $1–$8 (ledgerEntryParams); org id and key id are shared. */
const CLAIM_PARAMS = { orgId: 1, keyId: 7, idempotencyKey: 9, fingerprint: 10, ttlHours: 11 } as const;

const DEADLOCK_DETECTED = '40P01';

type WriteStatementRow = LedgerStatementRow & { readonly claimed: boolean } & Record<string, string | null>;

/**
 * How many queued writes to one limit run in one transaction: enough to
 * amortize a commit's WAL flush over a full queue of a pool's requests, few
 * enough that the batch holds the limit's row lock for tens of milliseconds
 * at most.
 */
export const MAX_WRITES_PER_TRANSACTION = 32;

/**
 * The service's writes: recordWrite for a write to an idle limit; writes to
 * a limit with a transaction in flight wait for it, then run together
 * through recordWrites (WriteCoalescer). Per organization and limit uid, so
 * a drawdown and a repayment of one limit share a queue.
 */
export function coalescedWrites(
  store: Store,
  limits: ResourceDefinition,
  ttlHours: number,
  maxBatch = MAX_WRITES_PER_TRANSACTION,
): WriteCoalescer<WriteRequest, WriteAnswer> {
  return new WriteCoalescer(
    {
      laneOf: (request) => `${request.orgId}/${request.limitUid}`,
      conflictKeyOf: (request) => request.idempotencyKey,
      one: (request) => recordWrite(store, limits, request, ttlHours),
      many: (requests) => recordWrites(store, limits, requests, ttlHours),
      // A 503 for the whole batch: with the database frozen, the fallback would
      // run up to maxBatch writes one after another, each waiting out its timeout.
      failsEveryRequest: (error) => error instanceof StoreUnavailableError,
      isOutOfTime: (error) => error instanceof StoreUnavailableError && error.cause instanceof DatabaseBudgetExceededError,
      timeLeft: (request) => request.budget?.remaining(),
      outOfTime: () => new StoreUnavailableError(new DatabaseBudgetExceededError(0)),
    },
    maxBatch,
  );
}

/**
 * Records one HTTP drawdown or repayment exactly once per Idempotency-Key,
 * in one transaction of three round trips: BEGIN (with its
 * synchronous_commit); one statement that claims the key (a concurrent
 * request with the same key waits here) and, only if it claimed it, applies
 * the entry through the ledger's own statement (ledgerEntryCtes) returning
 * the limit after it in the resource's own columns; the UPDATE storing the
 * response, sent with the COMMIT. A 409 refusal changed nothing (an
 * UPDATE of no row), so it is stored too, and a retry replays it rather than
 * succeeding later on a different balance. Anything else thrown (an unknown
 * limit, an `at` the database finds in the future, a database error) rolls
 * the whole transaction back: no row of the key is left, so a retry runs
 * afresh.
 */
export async function recordWrite(store: Store, limits: ResourceDefinition, request: WriteRequest, ttlHours: number): Promise<WriteAnswer> {
  const write = prepare(request, ttlHours);
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await store.transaction(async (tx) => {
        const answer = await writeIn(tx, limits, write);
        if (answer === 'reused') throw keyReused();
        if (!answer.replayed) storeIdempotentResponseAtCommit(tx, write.claim, answer.status, answer.body);
        return answer;
      }, { ...SYNCHRONOUS_STANDBY, budget: request.budget });
    } catch (error) {
      // Another process's batch held this limit and waited for this write's key (the same request sent to
      // two processes at once): PostgreSQL rolled this one back, so run it again; the key then replays.
      if (attempt === 0 && isDeadlock(error)) continue;
      throw error;
    }
  }
}

function isDeadlock(error: unknown): boolean {
  return error instanceof Error && (error as { code?: unknown }).code === DEADLOCK_DETECTED;
}

/**
 * Several writes in ONE transaction: each as recordWrite runs it, one after
 * another in the order given (each sees the limit as the ones before left it),
 * then every stored response in one UPDATE sent with the COMMIT, so one WAL
 * flush commits them all. Answers as recordWrite would have given them one by
 * one, 422 idempotency_key_reused included (a key found, nothing written).
 * Anything else thrown rolls the whole transaction back and throws: the caller
 * runs each request on its own then. No two requests may share a key (the
 * second would wait for the first's row lock, in this same transaction).
 */
export async function recordWrites(
  store: Store,
  limits: ResourceDefinition,
  requests: readonly WriteRequest[],
  ttlHours: number,
): Promise<Settled<WriteAnswer>[]> {
  const writes = requests.map((request) => prepare(request, ttlHours));
  return store.transaction(async (tx) => {
    const settled: Settled<WriteAnswer>[] = [];
    const stored: StoredResponse[] = [];
    for (const write of writes) {
      const answer = await writeIn(tx, limits, write);
      if (answer === 'reused') {
        settled.push({ ok: false, error: keyReused() });
        continue;
      }
      if (!answer.replayed) stored.push({ ...write.claim, status: answer.status, body: answer.body });
      settled.push({ ok: true, value: answer });
    }
    storeIdempotentResponsesAtCommit(tx, stored);
    return settled;
  }, { ...SYNCHRONOUS_STANDBY, budget: requests[0]?.budget }); // a batch's database budget is its first request's
}

interface PreparedWrite {
  readonly request: WriteRequest;
  readonly claim: ClaimRequest;
  readonly entry: LedgerEntryInput;
  readonly params: unknown[];
}

function prepare(request: WriteRequest, ttlHours: number): PreparedWrite {
  const claim = { orgId: request.orgId, idempotencyKey: request.idempotencyKey, fingerprint: fingerprintOf(request), keyId: request.keyId, ttlHours };
  const entry = {
    kind: request.kind,
    id: newLedgerId(request.kind),
    limit: request.limitUid,
    amount: request.body.amount,
    at: request.body.at,
    keyId: request.keyId,
    reference: request.body.reference,
  };
  const params = [...ledgerEntryParams(request.orgId, entry), claim.idempotencyKey, claim.fingerprint, claim.ttlHours];
  return { request, claim, entry, params };
}

/** One write inside a transaction: its answer (to store unless replayed), or 'reused' (the key holds another request). */
async function writeIn(tx: Queryable, limits: ResourceDefinition, write: PreparedWrite): Promise<WriteAnswer | 'reused'> {
  // A prune may delete the row between the claim and the read of it: then claim again.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const [row] = await tx.query<WriteStatementRow>(writeStatement(limits, write.request.kind), write.params, { prepare: true });
    if (!row?.claimed) {
      const earlier = await claimedEarlier(tx, write.claim);
      if (!earlier) continue;
      if (earlier.kind === 'replay') return { status: earlier.status, body: earlier.body, replayed: true };
      return 'reused';
    }
    const answer = await answerOf(tx, limits, write.request, write.entry, row);
    return { ...answer, replayed: false };
  }
  throw new Error('could not claim an idempotency key: it kept disappearing');
}

function keyReused(): ApiError {
  return new ApiError(
    'idempotency_key_reused',
    'this Idempotency-Key was already used for a different request (another limit, kind, amount, at or reference); use a new key for a new write',
  );
}

/** The 201 with the entry and the limit after it, or the stored 409 refusal. */
async function answerOf(
  tx: Queryable,
  limits: ResourceDefinition,
  request: WriteRequest,
  entry: LedgerEntryInput,
  row: WriteStatementRow,
): Promise<{ status: number; body: string }> {
  const recorded = outcomeOf(row, entry);
  if (recorded) {
    const result = { id: entry.id, kind: entry.kind, ...recorded };
    return { status: 201, body: JSON.stringify({ entry: entryJson(result), limit: serializeRecord(limits, row) }) };
  }
  const error = await refusal(tx, request.orgId, entry);
  if (!STORED_REFUSALS.has(error.code)) throw toApiError(error);
  const refused = new ApiError(error.code as 'insufficient_balance' | 'repayment_exceeds_outstanding', error.message);
  return { status: refused.status, body: JSON.stringify(problemDocument(refused, request.requestId)) };
}

function outcomeOf(row: WriteStatementRow, entry: LedgerEntryInput): RecordedEntry | undefined {
  try {
    return ledgerOutcome(row, entry);
  } catch (error) {
    throw error instanceof LedgerError ? toApiError(error) : error;
  }
}

const statements = new WeakMap<ResourceDefinition, Map<LedgerKind, string>>();

/** One text per resource and kind (a prepared statement): claim the key, then the ledger's CTEs gated on the claim. */
function writeStatement(limits: ResourceDefinition, kind: LedgerKind): string {
  let byKind = statements.get(limits);
  if (!byKind) statements.set(limits, (byKind = new Map()));
  let text = byKind.get(kind);
  if (!text) {
    const ledger = ledgerEntryCtes(kind, selectList(limits, 't'), 'AND EXISTS (SELECT 1 FROM idempotency_claimed)');
    text = `WITH ${claimIdempotencyKeyCte(CLAIM_PARAMS)}, ${ledger}
      ${LEDGER_OUTCOME_SELECT.replace('SELECT ', 'SELECT EXISTS (SELECT 1 FROM idempotency_claimed) AS claimed, ')}`;
    byKind.set(kind, text);
  }
  return text;
}

/** The entry as `GET /api/limits/{uid}/entries/` shows it (the LedgerEntry schema; the limit is beside it in the answer). */
function entryJson(result: RecordedEntry & Pick<LedgerEntryInput, 'id' | 'kind'>): Record<string, unknown> {
  return {
    id: result.id,
    kind: result.kind,
    amount: Number(result.amount),
    at: result.at,
    reference: result.reference,
    // A direct drawdown or repayment belongs to no loan (loan writes: src/http/loan-write.ts).
    loan: null,
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
