import type { DatabaseBudget } from './database-budget.js';

/**
 * The one small interface both stores implement: PostgreSQL through a
 * node-postgres pool, and PGlite (PostgreSQL compiled to WebAssembly) in
 * process. Every query is plain PostgreSQL SQL with `$n` parameters; results
 * come back as plain row objects.
 *
 * Portable results: select numerics, big integers and timestamps as text
 * (`capacity::text`, `count(*)::text`, `to_char(...)`), because the two
 * drivers parse those types differently.
 *
 * @example
 * const store = await openStore('pglite://memory');
 * await migrate(store);
 * const rows = await store.query<{ uid: string }>('SELECT uid FROM organizations WHERE name = $1', ['Acme']);
 * await store.transaction(async (tx) => {
 *   await tx.query('UPDATE credit_limits SET outstanding = outstanding + $1 WHERE id = $2', ['10.00', id]);
 * });
 */
export interface QueryOptions {
  /**
   * A hot statement from a small fixed set of texts (the list engine's):
   * PostgreSQL prepares it once per connection and reuses the plan. Never
   * set it for SQL with values spliced into its text.
   */
  readonly prepare?: boolean;
  /**
   * In a transaction (PostgreSQL): if this is its first statement, send it
   * with the BEGIN in one round trip, its parameters as quoted literals
   * (text, numbers, NULL and arrays of them). With `prepare`, only once the
   * connection has prepared it (then as EXECUTE of the prepared statement,
   * with its plan); its first run on a connection goes on its own. Only for
   * a fixed statement text, never one with values spliced in.
   */
  readonly sendWithBegin?: boolean;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<Row[]>;
  /** Runs a script of several statements with no parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * A transaction: a Queryable that can also bulk-load rows with COPY.
 *
 * @example
 * await store.transaction(async (tx) => {
 *   await tx.query('CREATE TEMP TABLE stage (line bigint, uid text) ON COMMIT DROP');
 *   await tx.copyFrom('stage (line, uid)', (async function* () { yield '1\tpm_1\n2\tpm_2\n'; })());
 * });
 */
export interface Transaction extends Queryable {
  /**
   * Runs `COPY <target> FROM …` in PostgreSQL's text format, fed from
   * `chunks` (text or UTF-8 bytes): each chunk holds whole rows, each ending in a newline. The
   * chunks are consumed as they come, so memory stays bounded however many
   * rows there are. Resolves to the number of rows copied.
   */
  copyFrom(target: string, chunks: AsyncIterable<string | Uint8Array>): Promise<number>;
  /**
   * Runs `sql` (one statement whose result is not needed) as the
   * transaction's last, together with its COMMIT: on PostgreSQL in the same
   * round trip, its parameters sent as quoted literals. Only for a fixed
   * statement text, never one with values spliced in. Once per transaction;
   * it fails the transaction like any statement.
   */
  queryAtCommit(sql: string, params: readonly (string | number | null)[]): void;
  /**
   * Runs `statements` (fixed texts, prepared like QueryOptions.prepare) in
   * order as the transaction's last, then COMMIT; resolves to each one's
   * rows. On PostgreSQL, when the connection has prepared every one of
   * them, the statements and COMMIT go as one message, with the BEGIN if
   * nothing of the transaction has been sent yet (the whole transaction in
   * one round trip). Otherwise they run one after the other (which prepares
   * them). Nothing may run in the transaction after it.
   */
  commitWith(statements: readonly Statement[]): Promise<unknown[][]>;
}

/** A fixed statement text and its parameters (text, numbers, NULL, and arrays of them). */
export interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
  /**
   * SET LOCAL text (no parameters) that the workers of a distributed
   * database must see too: on Citus it is sent as a message of its own,
   * because Citus passes a SET LOCAL on to the workers as the whole text of
   * the message it came in.
   */
  readonly forWorkers?: boolean;
}

/**
 * The text of a `forWorkers` SET LOCAL as it goes on its own: Citus passes a
 * SET LOCAL on to the workers only while `citus.propagate_set_commands` is
 * 'local', here for this one alone (elsewhere `citus.propagate_set_commands`
 * is a placeholder setting without effect).
 */
export function setLocalForWorkers(statement: Statement): string {
  return `SET LOCAL citus.propagate_set_commands = 'local'; ${statement.sql}; SET LOCAL citus.propagate_set_commands = 'none'`;
}

export type StoreKind = 'postgres' | 'pglite';

export interface TransactionOptions {
  /**
   * `remote_apply`: the commit returns only once the synchronous standby (if
   * the primary names one) has applied it. Set with the BEGIN, in the same
   * round trip.
   */
  readonly synchronousCommit?: 'remote_apply';
  /**
   * The request's database time (a PostgreSQL store): waiting for a
   * connection and the whole transaction must fit in what is left of it.
   */
  readonly budget?: DatabaseBudget | undefined;
}

export interface Store extends Queryable {
  readonly kind: StoreKind;
  /**
   * The store's queries bounded by one request's database time (the same
   * budget bounds that request's transaction through TransactionOptions);
   * absent where there is no such bound (PGlite).
   */
  withBudget?(budget: DatabaseBudget): Queryable;
  /** Where the data lives, safe to print: never includes a password. */
  readonly description: string;
  /** Runs `fn` in one transaction: committed if it resolves, rolled back if it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The database could not be reached (refused, timed out, connection lost,
 * shutting down). The request was fine: answer 503 and let the client retry.
 */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('the database is unreachable', { cause });
    this.name = 'StoreUnavailableError';
  }
}
