import type pg from 'pg';
import { classifyConnectError, classifyError, isServerAnswer } from './pg-errors.js';
import { pgQuery, type TimedQueryConfig } from './pg-query.js';

/**
 * When the database last answered one of a store's queries, and so what a
 * connection that could not be had means: a driver timeout during a wait in
 * which the database answered others is this node's overload, not an outage
 * (classifyConnectError).
 */
export class DatabaseAnswers {
  /** performance.now() ms of the last answer (a result, or an error of the database's own). */
  private lastAnsweredAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly connectTimeoutMs: number) {}

  /** Keeps when the database last answered: a result, or an error of its own (not a lost connection or a timeout). */
  note(error: Error | null | undefined): void {
    if (isServerAnswer(error)) this.lastAnsweredAt = performance.now();
  }

  /** What a connection that could not be had since `waitFrom` means: overloaded, or the database away. */
  connectFailure(error: unknown, waitFrom: number): unknown {
    return classifyConnectError(error, performance.now() - waitFrom, this.connectTimeoutMs, this.lastAnsweredAt > waitFrom);
  }

  /**
   * A query on a pooled client, as pool.query runs it — the client's errors heard while it is checked out (the
   * pool listens only while it is idle), and a client whose query failed not reused — with the connect failure
   * told from the query's.
   */
  queryPooled<Row>(pool: pg.Pool, config: TimedQueryConfig): Promise<Row[]> {
    const waitFrom = performance.now();
    return new Promise((resolve, reject) => {
      pool.connect((connectError, client, release) => {
        if (connectError || !client) return reject(this.connectFailure(connectError, waitFrom));
        let done = false;
        const finish = (error: Error | undefined, rows?: Row[]) => {
          if (done) return;
          done = true;
          client.off('error', finish);
          release(error);
          this.note(error);
          if (error) reject(classifyError(error));
          else resolve(rows ?? []);
        };
        client.on('error', finish);
        client.query(pgQuery(config, (error, result) => finish(error ?? undefined, error ? undefined : (result.rows as Row[]))));
      });
    });
  }
}
