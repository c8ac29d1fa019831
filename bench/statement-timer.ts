import type { QueryOptions, Store, Transaction, TransactionOptions } from '../src/store/store.js';

/** Total time and count of one statement text (its first 100 characters, whitespace folded). */
export interface StatementTime {
  readonly statement: string;
  calls: number;
  ms: number;
}

/**
 * Wraps a store so that every statement run in its transactions (queries,
 * `exec`, COPY) is timed from the client's side: where an import's time goes
 * in the database, statement by statement, without touching the import.
 */
export function timeStatements(store: Store): { store: Store; times: () => StatementTime[] } {
  const totals = new Map<string, StatementTime>();
  const timed = async <T>(sql: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await run();
    } finally {
      const statement = sql.replace(/\s+/g, ' ').trim().slice(0, 100);
      const entry = totals.get(statement) ?? { statement, calls: 0, ms: 0 };
      entry.calls += 1;
      entry.ms += performance.now() - started;
      totals.set(statement, entry);
    }
  };
  const wrapped: Store = Object.create(store) as Store;
  wrapped.transaction = <T>(fn: (tx: Transaction) => Promise<T>, options?: TransactionOptions) =>
    store.transaction(
      (tx) =>
        fn({
          query: <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => timed(sql, () => tx.query<Row>(sql, params, options)),
          exec: (sql: string) => timed(sql, () => tx.exec(sql)),
          copyFrom: (target, chunks) => timed(`COPY ${target}`, () => tx.copyFrom(target, chunks)),
          // Not timed: the store sends it with the COMMIT, after fn.
          queryAtCommit: (sql, params) => tx.queryAtCommit(sql, params),
          commitWith: (statements) => timed(statements.map((statement) => statement.sql).join('; '), () => tx.commitWith(statements)),
        }),
      options,
    );
  return { store: wrapped, times: () => [...totals.values()].sort((a, b) => b.ms - a.ms) };
}
