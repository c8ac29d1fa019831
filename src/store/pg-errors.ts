import pg from 'pg';
import { DatabaseOverloadedError } from './fair-share.js';
import { StoreUnavailableError } from './store.js';
import { TransactionInterruptedError, type TransactionStage } from './transaction-interrupted.js';
import { isUnavailableSqlstate } from './unavailable-sqlstates.js';

/* What a driver error means: the database away (StoreUnavailableError) or the query's own problem, and how far a transaction got. */

/**
 * How far a transaction got, given what failed it: a statement's ERROR (not
 * FATAL) is the server's own answer, and it skips the rest of the message —
 * a COMMIT sent in the same message did not run, and the transaction is
 * rolled back. So a write refused that way (statement_timeout, a standby's
 * read-only refusal) ran nothing, even with its COMMIT sent. (pg reports
 * the severity as the server words it: a server whose lc_messages is not
 * English leaves the stage as it was, the safe side: outcome unknown.)
 */
export function stageAt(error: unknown, stage: TransactionStage): TransactionStage {
  return stage === 'commit-sent' && error instanceof pg.DatabaseError && error.severity === 'ERROR' ? 'in-transaction' : stage;
}

/** `error` as a TransactionInterruptedError at `stage` if it means the database is unavailable; as is otherwise. */
export function interrupted(error: unknown, stage: TransactionStage): unknown {
  if (error instanceof TransactionInterruptedError || !(error instanceof StoreUnavailableError)) return error;
  return new TransactionInterruptedError(error.cause, stage);
}

/**
 * Whether a query failed because its connection died under it (the server
 * ended the session with FATAL, or the socket closed or reset), rather than
 * because of the query or a timeout: then another connection may serve it.
 */
export function isConnectionLost(error: Error): boolean {
  if (error instanceof pg.DatabaseError) return error.severity === 'FATAL' || error.severity === 'PANIC';
  // pg's own client-side read timeout (a fixed string of the driver, not server text): the server is slow, not gone.
  return error.message !== 'Query read timeout';
}

/**
 * The server answering with an error is a query problem; anything else the
 * driver throws (refused, reset, connect timeout, connection terminated) means
 * the database is away. Decided by error class and SQLSTATE, not message text.
 */
export function classifyError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (error instanceof pg.DatabaseError) {
    return isUnavailableSqlstate(error.code) ? new StoreUnavailableError(error) : error;
  }
  if (error instanceof TypeError || error instanceof RangeError || !(error instanceof Error)) return error;
  return new StoreUnavailableError(error);
}

/** Whether a query's outcome came from the server: a result (no error) or the server's own error, not a lost connection or a timeout. */
export function isServerAnswer(error: unknown): boolean {
  return error === undefined || error === null || error instanceof pg.DatabaseError;
}

/**
 * A connection that could not be had: the pool's wait for a free one, or a
 * new one's connect timeout (the driver's own timeouts: no SQLSTATE, no
 * system error code, after waiting at least `timeoutMs`), while the database
 * answered this process's other queries (`answeredDuringWait`), means the
 * process or its pool is overloaded — under a flood the event loop is too
 * busy to finish a connection's handshake in time — not that the database is
 * unreachable. A refused, reset or unresolvable connection (a system error
 * code), the server's own refusal (a SQLSTATE), or a timeout during which
 * nothing was answered (a frozen or lost server) stays a StoreUnavailableError.
 */
export function classifyConnectError(error: unknown, waitedMs: number, timeoutMs: number, answeredDuringWait: boolean): unknown {
  const driverTimeout = error instanceof Error && !(error instanceof pg.DatabaseError) && (error as { code?: unknown }).code === undefined && waitedMs >= timeoutMs;
  return driverTimeout && answeredDuringWait ? new DatabaseOverloadedError('no-connection', error) : classifyError(error);
}

export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable URL)';
  }
}
