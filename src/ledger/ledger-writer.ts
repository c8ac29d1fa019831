import { ERROR_CODES } from '../domain/errors.js';
import { DatabaseBudget } from '../store/database-budget.js';
import { setLocalForWorkers, StoreUnavailableError, type Statement, type Store, type Transaction, type TransactionOptions } from '../store/store.js';
import type { FairShare } from '../store/fair-share.js';
import { answerOf, keyReused, overloaded, waitedTooLong } from './write-answers.js';

export type { LedgerWriteRequest, WriteAnswer } from './ledger-answers.js';
import {
  claimIdempotencyKeys,
  claimKeysStatement,
  storeAnswerRow,
  storeIdempotentResponsesAtCommit,
  type ClaimRequest,
  type StoredResponse,
} from './idempotency-keys.js';
import { replayOf, settledOf, type LedgerWriteRequest, type WriteAnswer } from './ledger-answers.js';
import { RetryWrite, type Applied, type StoredRefusal } from './ledger-operation.js';
import { WriteQueue, type Settled, type WriteQueueOptions } from './write-queue.js';
import { eventCauseStatement } from './event-context.js';
import { JOINED_STATUS, joinedMessage } from './joined-message.js';

export interface LedgerWriterOptions {
  /** How long a stored answer is replayed for its Idempotency-Key. */
  readonly idempotencyTtlHours: number;
  /** Database time of one write transaction, from its start (PostgreSQL); 0 or absent: none. */
  readonly transactionBudgetMs?: number | undefined;
  readonly queue?: Partial<WriteQueueOptions> | undefined;
  /** The node's FairShare: told when a transaction is answered, asked whether the database answered lately (overloaded or unreachable). */
  readonly share?: FairShare | undefined;
  /** Told when a write of the organization was recorded (not replayed, not refused): its events wait to be published. */
  readonly recorded?: ((orgId: string) => void) | undefined;
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
 *   lone writes to other limits that arrive together or wait for a slot
 *   go together,
 *   refusal on arrival when the wait would exceed the bound).
 * - One transaction per batch: BEGIN; every Idempotency-Key of the batch
 *   claimed in one statement, in key order, before any row lock (no
 *   deadlock between batches sharing keys, in any process); then each
 *   claimed write. A key held by a concurrent request (in any process)
 *   waits for it, then replays its stored answer. Two ways:
 *   - lone writes (one per credit limit, of kinds with `alone` or
 *     `joinable`: drawdowns, repayments, loan creations): the whole
 *     transaction in one message — the claim, the limits locked in uid
 *     order (one lock order for every such transaction), one set-based
 *     statement per kind that writes them and stores their answers' values
 *     (joined-message.ts; a drawdown or repayment alone: its own
 *     statements), COMMIT: one round trip;
 *   - the long way (writes queued behind one limit, loan repayments, a
 *     write the one message did not write): each operation in arrival
 *     order, a round trip each, then every answer stored by one UPDATE
 *     sent with the COMMIT.
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
        // Lone writes of one organization that can go in one message run together when they wait for a slot.
        groupOf: (request) => (fitsOneMessage(request) ? request.operation.orgId : undefined),
        tenantOf: (request) => request.operation.orgId,
        run: (batch) => this.runBatch(batch),
        overloaded: (waitMs) => overloaded(waitMs),
        waitedTooLong: (waitedMs) => waitedTooLong(waitedMs),
      },
      {
        maxBatch: options.queue?.maxBatch ?? MAX_WRITES_PER_TRANSACTION,
        concurrency: options.queue?.concurrency ?? 8,
        maxWaitMs: options.queue?.maxWaitMs ?? DEFAULT_WRITE_QUEUE_WAIT_MS,
        budgetMs: this.budgetMs,
      },
    );
  }

  /** Records the write once (per Idempotency-Key, if it has one) and answers it; see the class comment for what it throws. */
  write<T>(request: LedgerWriteRequest<T>): Promise<WriteAnswer<T>> {
    const answer = this.queue.run(request) as Promise<WriteAnswer<T>>;
    const recorded = this.options.recorded;
    if (!recorded) return answer;
    return answer.then((answered) => {
      if (!answered.replayed && answered.status < 300) recorded(request.operation.orgId);
      return answered;
    });
  }

  get stats(): WriteQueue<AnyRequest, WriteAnswer>['stats'] {
    return this.queue.stats;
  }

  get busyLanes(): number {
    return this.queue.busyLanes;
  }

  private answerOf(error: unknown): unknown {
    return answerOf(error, this.options.share, this.budgetMs);
  }

  /** `store.transaction`, telling the share when the database answered it (committed, or refused it itself). */
  private async inTransaction<T>(fn: (tx: Transaction) => Promise<T>, budget: DatabaseBudget | undefined): Promise<T> {
    try {
      const result = await this.store.transaction(fn, { ...SYNCHRONOUS_STANDBY, budget });
      this.options.share?.answered();
      return result;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) this.options.share?.answered();
      throw error;
    }
  }

  /**
   * The batch in one transaction: lone writes (one per credit limit) of
   * kinds that can, in one message (runInOneMessage); the rest the long way
   * (`transaction`). If the long way throws, each write runs alone (one
   * failing write never fails or changes the others) — unless what it threw
   * is every write's answer as it is: the database is unreachable (nothing
   * ran) or did not confirm the commit (outcome unknown for all of them).
   */
  private async runBatch(batch: readonly AnyRequest[]): Promise<Settled<WriteAnswer>[]> {
    if (batch.every(fitsOneMessage) && new Set(batch.map((request) => request.operation.lane)).size === batch.length) return this.runInOneMessage(batch);
    const [only] = batch;
    if (batch.length === 1 && only) return [await this.runLongWay(only)];
    try {
      return await this.transaction(batch);
    } catch (error) {
      if (answersEveryWrite(error)) return batch.map(() => ({ ok: false, error: this.answerOf(error) }));
      return this.eachLongWay(batch);
    }
  }

  /**
   * Writes to distinct credit limits in one message (inOneMessage); those
   * it did not write — and every one of them if it failed otherwise than
   * for all (a deadlock victim, a statement that failed) — then run the long
   * way, one by one, which tells why.
   */
  private async runInOneMessage(batch: readonly AnyRequest[]): Promise<Settled<WriteAnswer>[]> {
    let answers: (Settled<WriteAnswer> | undefined)[];
    try {
      answers = await this.inOneMessage(batch);
    } catch (error) {
      if (answersEveryWrite(error)) return batch.map(() => ({ ok: false, error: this.answerOf(error) }));
      answers = batch.map(() => undefined);
    }
    const settled: Settled<WriteAnswer>[] = [];
    for (const [i, request] of batch.entries()) settled.push(answers[i] ?? (await this.runLongWay(request)));
    return settled;
  }

  private async eachLongWay(batch: readonly AnyRequest[]): Promise<Settled<WriteAnswer>[]> {
    const settled: Settled<WriteAnswer>[] = [];
    for (const request of batch) settled.push(await this.runLongWay(request));
    return settled;
  }

  /** One write in its own transaction, the long way, run once more if it lost a race (a deadlock victim, a concurrent id). */
  private async runLongWay(request: AnyRequest): Promise<Settled<WriteAnswer>> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const [settled] = await this.transaction([request]);
        if (!settled) throw new Error('ledger writer: a transaction answered no write');
        return settled;
      } catch (error) {
        if (attempt === 0 && isRace(error)) continue;
        return { ok: false, error: this.answerOf(error) };
      }
    }
  }

  /**
   * Keyed writes to distinct credit limits (one organization), of kinds
   * that have `alone` or `joinable`, as ONE message: BEGIN, the claim of all
   * their keys (in key order), then either the joined statements
   * (joined-message.ts: the limits locked in uid order, one statement per
   * kind) or, for a write alone, its write and the statement that stores its
   * answer's values under its key; COMMIT (Transaction.commitWith).
   * Resolves to each write's answer — its own, or an earlier request's with
   * the same key — or undefined where it did not write: then nothing of it
   * was changed (its claim was deleted in the same transaction) and it runs
   * the long way. Throws as `transaction` does.
   */
  private async inOneMessage(batch: readonly AnyRequest[]): Promise<(Settled<WriteAnswer> | undefined)[]> {
    const ttlHours = this.options.idempotencyTtlHours;
    const byLimit = batch.map((request, i) => ({ request, i })).sort((a, b) => (a.request.operation.lane < b.request.operation.lane ? -1 : 1));
    const claimed = byLimit.map(({ request }) => ({ request, claim: claimOf(request, ttlHours) }));
    const orgId = batch[0]?.operation.orgId ?? '';
    const budget = this.budgetMs > 0 ? new DatabaseBudget(this.budgetMs) : undefined;
    const joined = joinedMessage(
      orgId,
      claimed.map(({ request, claim }) => ({ operation: request.operation, claim, cause: { requestId: request.requestId, idempotencyKey: request.idempotency?.key } })),
    );
    if (joined) {
      const ends = joined.ends(await this.inTransaction((tx) => tx.commitWith(joined.statements), budget));
      const answers = new Array<Settled<WriteAnswer> | undefined>(batch.length);
      claimed.forEach(({ request }, n) => {
        answers[byLimit[n]?.i ?? n] = settledOf(request, JOINED_STATUS, ends[n] ?? { kind: 'not-written' });
      });
      return answers;
    }
    // Not joined: each write's own statements; a kind without them runs the long way.
    if (!claimed.every(({ request }) => request.operation.alone)) return batch.map(() => undefined);
    const writes = claimed.map(({ request, claim }) => {
      const lone = (request.operation.alone as NonNullable<AnyRequest['operation']['alone']>)(claim);
      return { request, claim, lone, store: storeAnswerRow(lone.answerSelect, claim, lone.status) };
    });
    const statements = [
      claimKeysStatement(orgId, writes.map((write) => write.claim)),
      ...writes.flatMap((write) => [causeOf(write.request), write.lone.write, write.store.statement]),
    ];
    const rows = await this.inTransaction((tx) => tx.commitWith(statements), budget);
    const answers = new Array<Settled<WriteAnswer> | undefined>(batch.length);
    writes.forEach(({ request, lone, store }, n) => {
      const end = store.end(rows[3 + 3 * n] ?? []);
      answers[byLimit[n]?.i ?? n] = settledOf(request, lone.status, end);
    });
    return answers;
  }

  private transaction(batch: readonly AnyRequest[]): Promise<Settled<WriteAnswer>[]> {
    const budget = this.budgetMs > 0 ? new DatabaseBudget(this.budgetMs) : undefined;
    const orgId = batch[0]?.operation.orgId ?? '';
    const ttlHours = this.options.idempotencyTtlHours;
    return this.inTransaction(async (tx) => {
      const settled: Settled<WriteAnswer>[] = [];
      const stored: StoredResponse[] = [];
      const answer = (request: AnyRequest, applied: Applied<unknown>): void => {
        let answered: WriteAnswer;
        if (applied.ok) answered = { status: applied.status, body: applied.body, replayed: false, value: applied.value };
        else if (!request.idempotency) {
          settled.push({ ok: false, error: applied.refusal });
          return;
        } else {
          const refusal: StoredRefusal = { code: applied.refusal.code, detail: applied.refusal.message, request_id: request.requestId ?? '' };
          answered = { status: ERROR_CODES[refusal.code].status, refusal, replayed: false };
        }
        if (request.idempotency) {
          const answer = answered.refusal ? { row: { ...answered.refusal } } : { body: answered.body };
          stored.push({ orgId, idempotencyKey: request.idempotency.key, status: answered.status, answer });
        }
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
        if (claim?.kind === 'replay') settled.push({ ok: true, value: replayOf(request, claim.status, claim.answer) });
        else if (claim?.kind === 'reused') settled.push({ ok: false, error: keyReused() });
        else {
          await tx.exec(setLocalForWorkers(causeOf(request)));
          answer(request, await request.operation.apply(tx));
        }
      }
      storeIdempotentResponsesAtCommit(tx, stored);
      return settled;
    }, budget);
  }
}

/** Whether a write can go in one message (LedgerWriter.inOneMessage): a keyed write of a kind that has `alone` or `joinable`. */
function fitsOneMessage(request: AnyRequest): boolean {
  const operation = request.operation;
  return request.idempotency !== undefined && operation.renderStored !== undefined && (operation.alone !== undefined || operation.joinable !== undefined);
}

/** The statement that names, for the events of this write, the request that caused it. */
function causeOf(request: AnyRequest): Statement {
  return eventCauseStatement({ requestId: request.requestId, idempotencyKey: request.idempotency?.key });
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
