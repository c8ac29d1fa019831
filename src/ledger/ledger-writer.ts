import { ApiError } from '../domain/errors.js';
import { DatabaseBudget } from '../store/database-budget.js';
import { StoreUnavailableError, type Store, type TransactionOptions } from '../store/store.js';
import { TransactionInterruptedError } from '../store/transaction-interrupted.js';
import { claimIdempotencyKeys, storeAnswerRow, storeIdempotentResponsesAtCommit, type ClaimRequest, type StoredAnswer, type StoredResponse } from './idempotency-keys.js';
import { RetryWrite, type Applied, type LedgerOperation } from './ledger-operation.js';
import { WriteQueue, type Settled, type WriteQueueOptions } from './write-queue.js';

/** A write to record, as the HTTP route, the CLI or a test asks for it. */
export interface LedgerWriteRequest<T = unknown> {
  readonly operation: LedgerOperation<T>;
  /**
   * An HTTP write's Idempotency-Key and the API key that sent it: the first
   * answer is stored under it and replayed. Absent for a caller whose
   * operation is idempotent on its own (the CLI's entry id).
   */
  readonly idempotency?: { readonly key: string; readonly keyId: string } | undefined;
  /** Named in a stored refusal's problem document. */
  readonly requestId?: string | undefined;
}

export interface WriteAnswer<T = unknown> {
  readonly status: number;
  /** The JSON text to send (and stored for replays). */
  readonly body: string;
  /** True when this is the stored answer to an earlier request with the same key. */
  readonly replayed: boolean;
  /** The operation's own result; undefined on a replay. */
  readonly value: T | undefined;
}

export interface LedgerWriterOptions {
  /** How long a stored answer is replayed for its Idempotency-Key. */
  readonly idempotencyTtlHours: number;
  /** The problem+json text of a refusal that is stored under its key (the HTTP layer's rendering). */
  readonly problemBody: (error: ApiError, requestId: string) => string;
  /** Database time of one write transaction, from its start (PostgreSQL); 0 or absent: none. */
  readonly transactionBudgetMs?: number | undefined;
  readonly queue?: Partial<WriteQueueOptions> | undefined;
}

/**
 * How many queued writes to one limit run in one transaction: enough to
 * amortize a commit's WAL flush over a full queue of a pool's requests, few
 * enough that the batch holds the limit's row lock for tens of milliseconds
 * at most.
 */
export const MAX_WRITES_PER_TRANSACTION = 32;
/** Default of WRITE_QUEUE_WAIT_MS. */
export const DEFAULT_WRITE_QUEUE_WAIT_MS = 5000;

/** A recorded entry returns only once the synchronous standby (if any) applied it (docs/scaling.md). */
const SYNCHRONOUS_STANDBY: TransactionOptions = { synchronousCommit: 'remote_apply' };
const DEADLOCK_DETECTED = '40P01';
const SERIALIZATION_FAILURE = '40001';

type AnyRequest = LedgerWriteRequest<unknown>;

/**
 * The ledger's one way to write: every drawdown and repayment (HTTP, CLI)
 * goes through `write`, and so does any other kind of LedgerOperation.
 *
 * - Queueing: WriteQueue (one transaction per lane at a time, writes queued
 *   behind it run together, a bounded number of transactions per process,
 *   refusal on arrival when the wait would exceed the bound).
 * - One transaction per batch: BEGIN; every Idempotency-Key of the batch
 *   claimed in one statement, in key order, before any row lock (no
 *   deadlock between batches sharing keys, in any process); then each
 *   claimed write's operation in arrival order; then every answer stored by
 *   one UPDATE sent with the COMMIT. A key held by a concurrent request (in
 *   any process) waits for it, then replays its stored answer.
 * - Answers that never lie: a transaction that failed before its COMMIT was
 *   sent ran nothing (StoreUnavailableError: 503 service_unavailable); one
 *   whose COMMIT went unanswered is `outcome_unknown` (retry with the same
 *   key); a write refused by the queue never reached the database.
 */
export class LedgerWriter {
  private readonly queue: WriteQueue<AnyRequest, WriteAnswer>;
  private readonly budgetMs: number;

  constructor(
    private readonly store: Store,
    private readonly options: LedgerWriterOptions,
  ) {
    this.budgetMs = store.withBudget ? (options.transactionBudgetMs ?? 0) : 0;
    this.queue = new WriteQueue<AnyRequest, WriteAnswer>(
      {
        laneOf: (request) => request.operation.lane,
        conflictKeyOf: (request) => request.idempotency?.key,
        run: (batch) => this.runBatch(batch),
        overloaded: (waitMs) => overloaded(waitMs),
        waitedTooLong: (waitedMs) => waitedTooLong(waitedMs),
      },
      {
        maxBatch: options.queue?.maxBatch ?? MAX_WRITES_PER_TRANSACTION,
        concurrency: options.queue?.concurrency ?? 8,
        maxWaitMs: options.queue?.maxWaitMs ?? DEFAULT_WRITE_QUEUE_WAIT_MS,
      },
    );
  }

  /** Records the write once (per Idempotency-Key, if it has one) and answers it; see the class comment for what it throws. */
  write<T>(request: LedgerWriteRequest<T>): Promise<WriteAnswer<T>> {
    return this.queue.run(request) as Promise<WriteAnswer<T>>;
  }

  get stats(): WriteQueue<AnyRequest, WriteAnswer>['stats'] {
    return this.queue.stats;
  }

  get busyLanes(): number {
    return this.queue.busyLanes;
  }

  /**
   * The batch in one transaction. If it throws, each write runs alone (one
   * failing write never fails or changes the others) — unless what it threw
   * is every write's answer as it is: the database is unreachable (nothing
   * ran) or did not confirm the commit (outcome unknown for all of them).
   */
  private async runBatch(batch: readonly AnyRequest[]): Promise<Settled<WriteAnswer>[]> {
    const [only] = batch;
    if (batch.length === 1 && only) return [await this.runAlone(only)];
    try {
      return await this.transaction(batch);
    } catch (error) {
      if (answersEveryWrite(error)) return batch.map(() => ({ ok: false, error: answerOf(error) }));
      const settled: Settled<WriteAnswer>[] = [];
      for (const request of batch) settled.push(await this.runAlone(request));
      return settled;
    }
  }

  /**
   * One write in its own transaction, run once more if it lost a race (a
   * deadlock victim, a concurrent id). A kind that can (LedgerOperation.alone)
   * runs first in one round trip; if that did not write (a refusal, a key
   * another request holds, a bad time), the long way tells why.
   */
  private async runAlone(request: AnyRequest): Promise<Settled<WriteAnswer>> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const written = await this.inOneRoundTrip(request);
        if (written) return { ok: true, value: written };
        const [settled] = await this.transaction([request]);
        if (!settled) throw new Error('ledger writer: a transaction answered no write');
        return settled;
      } catch (error) {
        if (attempt === 0 && isRace(error)) continue;
        return { ok: false, error: answerOf(error) };
      }
    }
  }

  /**
   * A lone keyed write of a kind that has `alone`: its BEGIN, its write, the
   * statement that stores its answer's values under its key and its COMMIT
   * in one message (Transaction.commitWith). Resolves to the answer — its
   * own, or an earlier request's with the same key — or undefined when it
   * did not write: then nothing was changed (its own claim of the key was
   * deleted in the same transaction) and the caller runs it the long way,
   * which tells why. Throws as `transaction` does.
   */
  private async inOneRoundTrip(request: AnyRequest): Promise<WriteAnswer | undefined> {
    const { operation, idempotency } = request;
    if (!idempotency || !operation.alone || !operation.renderStored) return undefined;
    const claim = claimOf(request, this.options.idempotencyTtlHours);
    const lone = operation.alone(claim);
    const store = storeAnswerRow(lone.answerSelect, claim, lone.status);
    const budget = this.budgetMs > 0 ? new DatabaseBudget(this.budgetMs) : undefined;
    const [, stored] = await this.store.transaction((tx) => tx.commitWith([lone.write, store.statement]), { ...SYNCHRONOUS_STANDBY, budget });
    const end = store.end(stored ?? []);
    switch (end.kind) {
      case 'stored': {
        const { body, value } = operation.renderStored(end.row);
        return { status: lone.status, body, replayed: false, value };
      }
      case 'replay':
        return { status: end.status, body: replayBody(request, end.answer), replayed: true, value: undefined };
      case 'reused':
        throw keyReused();
      case 'not-written':
        return undefined;
    }
  }

  private transaction(batch: readonly AnyRequest[]): Promise<Settled<WriteAnswer>[]> {
    const budget = this.budgetMs > 0 ? new DatabaseBudget(this.budgetMs) : undefined;
    const orgId = batch[0]?.operation.orgId ?? '';
    const ttlHours = this.options.idempotencyTtlHours;
    return this.store.transaction(async (tx) => {
      const settled: Settled<WriteAnswer>[] = [];
      const stored: StoredResponse[] = [];
      const answer = (request: AnyRequest, applied: Applied<unknown>): void => {
        let answered: WriteAnswer;
        if (applied.ok) answered = { status: applied.status, body: applied.body, replayed: false, value: applied.value };
        else if (!request.idempotency) {
          settled.push({ ok: false, error: applied.refusal });
          return;
        } else {
          const refused = new ApiError(applied.refusal.code, applied.refusal.message);
          answered = { status: refused.status, body: this.options.problemBody(refused, request.requestId ?? ''), replayed: false, value: undefined };
        }
        if (request.idempotency) stored.push({ orgId, idempotencyKey: request.idempotency.key, status: answered.status, body: answered.body });
        settled.push({ ok: true, value: answered });
      };
      const keyed = batch.flatMap((request, i) => (request.idempotency ? [i] : []));
      const claims = await claimIdempotencyKeys(
        tx,
        orgId,
        keyed.map((i) => claimOf(batch[i] as AnyRequest, ttlHours)),
      );
      const claimOfWrite = new Map(keyed.map((i, n) => [i, claims[n]]));
      for (const [i, request] of batch.entries()) {
        const claim = claimOfWrite.get(i);
        if (claim?.kind === 'replay') settled.push({ ok: true, value: { status: claim.status, body: replayBody(request, claim.answer), replayed: true, value: undefined } });
        else if (claim?.kind === 'reused') settled.push({ ok: false, error: keyReused() });
        else answer(request, await request.operation.apply(tx));
      }
      storeIdempotentResponsesAtCommit(tx, stored);
      return settled;
    }, { ...SYNCHRONOUS_STANDBY, budget });
  }
}

/** A stored answer's text: as stored, or rendered from its stored values by the operation that stored them (same fingerprint: same kind). */
function replayBody(request: AnyRequest, answer: StoredAnswer): string {
  if ('body' in answer) return answer.body;
  const render = request.operation.renderStored;
  if (!render) throw new Error('ledger writer: an answer stored as values for a kind of write that renders none');
  return render(answer.row).body;
}

function claimOf(request: AnyRequest, ttlHours: number): ClaimRequest {
  const idempotency = request.idempotency;
  if (!idempotency) throw new Error('ledger writer: a claim for a write without an Idempotency-Key');
  return { orgId: request.operation.orgId, idempotencyKey: idempotency.key, keyId: idempotency.keyId, fingerprint: request.operation.fingerprint, ttlHours };
}

/** The database unreachable (nothing ran) or silent after COMMIT (outcome unknown): the same for every write of the batch. */
function answersEveryWrite(error: unknown): boolean {
  return error instanceof StoreUnavailableError;
}

function isRace(error: unknown): boolean {
  if (error instanceof RetryWrite) return true;
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return code === DEADLOCK_DETECTED || code === SERIALIZATION_FAILURE;
}

/** What a failed transaction tells its writes: an unanswered COMMIT becomes outcome_unknown; the rest as thrown. */
function answerOf(error: unknown): unknown {
  if (!(error instanceof TransactionInterruptedError && error.outcomeUnknown)) return error;
  return new ApiError(
    'outcome_unknown',
    'the database did not confirm the commit of this write: it may or may not have been recorded; retry it with the same Idempotency-Key, which answers what was recorded or records it once',
    { headers: { 'retry-after': '1' }, cause: error },
  );
}

function keyReused(): ApiError {
  return new ApiError(
    'idempotency_key_reused',
    'this Idempotency-Key was already used for a different request (another limit, kind, amount, at or reference); use a new key for a new write',
  );
}

function overloaded(waitMs: number): ApiError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new ApiError(
    'overloaded',
    `overloaded: too many writes are queued on this node; this one would wait about ${Math.round(waitMs)} ms before reaching the database; nothing was recorded; retry after ${seconds} s`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

function waitedTooLong(waitedMs: number): ApiError {
  return new ApiError(
    'service_unavailable',
    `this write waited ${Math.round(waitedMs)} ms in its queue without reaching the database (the database is slow); nothing was recorded; retry shortly`,
    { headers: { 'retry-after': '1' } },
  );
}
