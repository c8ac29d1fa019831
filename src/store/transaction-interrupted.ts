import { StoreUnavailableError } from './store.js';

/**
 * How far a transaction got before its database went away (connection lost,
 * server shut down or failed over, budget spent):
 * - `before-begin`: nothing was sent; nothing ran.
 * - `in-transaction`: statements were sent but not COMMIT; the server rolls
 *   back a transaction whose session ends, so nothing was recorded.
 * - `commit-sent`: COMMIT was handed to the connection and no answer came
 *   back; it may or may not have committed. Only a retry with the same
 *   Idempotency-Key tells the client which.
 */
export type TransactionStage = 'before-begin' | 'in-transaction' | 'commit-sent';

/**
 * A transaction that could not finish because the database was unavailable:
 * a StoreUnavailableError (its `cause` is the underlying one, e.g. the pg
 * error or DatabaseBudgetExceededError) that also says how far it got.
 */
export class TransactionInterruptedError extends StoreUnavailableError {
  constructor(
    cause: unknown,
    readonly stage: TransactionStage,
  ) {
    super(cause);
    this.name = 'TransactionInterruptedError';
  }

  /** True when COMMIT was sent and its answer never came: the write may have been recorded. */
  get outcomeUnknown(): boolean {
    return this.stage === 'commit-sent';
  }
}
