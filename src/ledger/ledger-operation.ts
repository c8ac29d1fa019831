import type { Queryable, Statement } from '../store/store.js';
import type { ClaimRequest } from './idempotency-keys.js';
import type { JoinedEntry } from './joined-entries.js';
import type { JoinedLoan } from './joined-loans.js';
import type { LedgerError } from './ledger-error.js';

/** Refusals that are answers: stored under the write's Idempotency-Key and replayed, like a 201. */
export type StoredRefusalCode = 'insufficient_balance' | 'repayment_exceeds_outstanding';

/**
 * A refusal as the ledger answers and stores it under its Idempotency-Key
 * (idempotency_keys.response_row): its code and values, never rendered text.
 * The HTTP layer renders its problem document from them, the same bytes on
 * the first answer and on every replay (`request_id` is the first request's).
 */
export interface StoredRefusal {
  readonly code: StoredRefusalCode;
  readonly detail: string;
  readonly request_id: string;
}

/** What an operation did in its transaction: a success to answer (and store), or a refusal that changed nothing. */
export type Applied<T> =
  | { readonly ok: true; readonly status: number; readonly body: string; readonly value: T }
  | { readonly ok: false; readonly refusal: LedgerError & { readonly code: StoredRefusalCode } };

/**
 * One kind of write the ledger records (a drawdown or a repayment,
 * entry-operation.ts; a loan is another). The writer (ledger-writer.ts) gives
 * every kind the same queue, idempotency, transaction and answers; the kind
 * says only what it locks, how a request is recognized and what it does.
 *
 * Lock order, which keeps every interleaving free of deadlocks: a
 * transaction first claims all its Idempotency-Keys in one statement (in key
 * order), and only then may `apply` lock rows — the credit limit's row
 * first, then any row that hangs from it (a loan). `apply` must never take
 * another Idempotency-Key or a second credit limit.
 */
export interface LedgerOperation<T = unknown> {
  readonly orgId: string;
  /**
   * Writes of one lane never run concurrently in one process (they would
   * only wait for one row lock): the organization and the credit limit whose
   * row `apply` locks. Queued writes of a lane run together in one transaction.
   */
  readonly lane: string;
  /** SHA-256 (hex) of the request as the client sent it: one Idempotency-Key with another fingerprint is refused. */
  readonly fingerprint: string;
  /**
   * Does the write inside the transaction (its key, if any, already
   * claimed). A refusal that is an answer returns `{ ok: false }` having
   * changed nothing; anything thrown rolls the whole transaction back.
   */
  apply(tx: Queryable): Promise<Applied<T>>;
  /**
   * Optional: the write as statements that go to the database in one
   * message with its transaction's BEGIN, the claim of its key and COMMIT
   * (ledger-writer.ts): a write that runs alone, or with lone writes to
   * other limits. A kind that has it also renders the answers it stores
   * that way (`renderStored`).
   */
  alone?(claim: ClaimRequest): LoneWrite;
  /**
   * Optional: the write as one row of a set-based statement that writes a
   * batch of such writes at once (joined-entries.ts, joined-loans.ts): the
   * batch's writes of one kind and view go in one statement. A kind that has
   * it renders its stored answers (`renderStored`); without `alone`, even a
   * write alone goes this way.
   */
  readonly joinable?: JoinedEntry | JoinedLoan;
  /** The answer `alone` stored under a key (the row its `answerSelect` read), rendered as on the first answer. */
  renderStored?(row: Record<string, unknown>): { readonly body: string; readonly value: T };
}

/**
 * A write in one message: its key is claimed first, by the statement that
 * claims every key of the transaction (claimKeysStatement); `write` then
 * writes only if this transaction claimed it (claimedKeyGate), and locks
 * only its own credit limit's row — the whole write or nothing, as a
 * refusal writes nothing without raising an error: the COMMIT sent with it
 * never commits half a write (an error stops the message before the
 * COMMIT). `answerSelect` then reads the answer's values (one row when it
 * wrote, none otherwise; its $1 the organization's id), which are stored
 * with the key (storeAnswerRow) and rendered by `renderStored`. When it did
 * not write (refused, not claimed, a bad time), the request runs again the
 * long way, in a transaction of its own, which tells why.
 */
export interface LoneWrite {
  readonly write: Statement;
  readonly answerSelect: Statement;
  /** The status of the answer when it wrote (201). */
  readonly status: number;
}

/** Thrown by `apply` when a concurrent transaction won a race the write cannot answer within its own: run it again. */
export class RetryWrite extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RetryWrite';
  }
}
