import { retryAfterSeconds } from '../domain/header-values.js';
import { ApiError } from '../domain/errors.js';
import { DatabaseBudgetExceededError } from '../store/database-budget.js';
import type { FairShare } from '../store/fair-share.js';
import { TransactionInterruptedError } from '../store/transaction-interrupted.js';

/**
 * What a failed transaction tells its writes: an unanswered COMMIT is
 * `outcome_unknown`; a budget spent before the COMMIT was sent, while the
 * database went on answering others (`share`, since the transaction
 * started), is `overloaded` (nothing was recorded); the rest as thrown (a
 * database unreachable is 503 service_unavailable).
 */
export function answerOf(error: unknown, share: FairShare | undefined, budgetMs: number): unknown {
  if (!(error instanceof TransactionInterruptedError)) return error;
  if (error.outcomeUnknown) {
    return new ApiError(
      'outcome_unknown',
      'the database did not confirm the commit of this write: it may or may not have been recorded; retry it with the same Idempotency-Key, which answers what was recorded or records it once',
      { headers: { 'retry-after': '1' }, cause: error },
    );
  }
  if (error.cause instanceof DatabaseBudgetExceededError && share?.answeredSince(performance.now() - budgetMs)) {
    return new ApiError(
      'overloaded',
      `overloaded: the database is answering, but too slowly for this write to finish within its ${budgetMs} ms; nothing was recorded; retry after 1 s`,
      { headers: { 'retry-after': '1' }, cause: error },
    );
  }
  return error;
}

export function keyReused(): ApiError {
  return new ApiError(
    'idempotency_key_reused',
    'this Idempotency-Key was already used for a different request (another limit, kind, amount, at or reference); use a new key for a new write',
  );
}

export function overloaded(waitMs: number): ApiError {
  const seconds = retryAfterSeconds(waitMs);
  return new ApiError(
    'overloaded',
    `overloaded: too many writes are queued on this node; this one would wait about ${Math.round(waitMs)} ms before reaching the database; nothing was recorded; retry after ${seconds} s`,
    { headers: { 'retry-after': String(seconds) } },
  );
}

/** A write that waited in its queue past the bound (the database slowed down): it never reached the database. */
export function waitedTooLong(waitedMs: number): ApiError {
  return new ApiError(
    'overloaded',
    `overloaded: this write waited ${Math.round(waitedMs)} ms in its queue without reaching the database (the database is answering slowly); nothing was recorded; retry after 1 s`,
    { headers: { 'retry-after': '1' } },
  );
}
