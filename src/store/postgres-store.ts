import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFromStdin } from 'pg-copy-streams';
import { DatabaseBudgetExceededError, type DatabaseBudget } from './database-budget.js';
import { DatabaseAnswers } from './database-answers.js';
import { Deadlines } from './deadlines.js';
import { ConnectionWatch } from './pg-connection-watch.js';
import { classifyError, interrupted, isConnectionLost, redactUrl, stageAt } from './pg-errors.js';
import { executeText, foldedWithBegin, withLiterals } from './pg-literals.js';
import { CitusProbe, commitStatements } from './commit-messages.js';
import { connectOutsidePool, createPool, type Connect, type PostgresStoreOptions } from './pg-pool.js';
import { pgQuery, runPgQuery, type TimedQueryConfig } from './pg-query.js';
import { StatementNames } from './statement-names.js';
import { StoreUnavailableError, type Queryable, type QueryOptions, type Statement, type Store, type Transaction, type TransactionOptions } from './store.js';
import type { TransactionStage } from './transaction-interrupted.js';

export { redactUrl } from './pg-errors.js';
export type { PostgresStoreOptions } from './pg-pool.js';

/** pg.Pool's connect with a callback: the client, and how to give it back (with the error that broke it). */

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly description: string;
  readonly pool: pg.Pool;
  private readonly statements = new StatementNames();
  private readonly deadlines = new Deadlines();
  private readonly namedStatements: boolean;
  private readonly citus = new CitusProbe();
  /**
   * pg's client-side read timeout, a second past the statement timeout. Set
   * per query, not on the pool: a request's query within a shorter database
   * budget is ended by the budget first, and skips pg's timer (one setTimeout
   * and clearTimeout per query).
   */
  private readonly readTimeoutMs: number | undefined;
  /** Reads run again on another connection because theirs failed to open or was lost under them (a metric). */
  connectionRetries = 0;
  /** A client of the pool's kind, connected outside the pool: the one retry of a read whose connection was lost. */
  private readonly newClient: () => pg.Client;
  /** When the database last answered: tells this node's overload from an outage when no connection can be had. */
  private readonly answers: DatabaseAnswers;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    this.description = redactUrl(url);
    this.namedStatements = options.namedStatements ?? true;
    this.readTimeoutMs = options.queryTimeoutMs ? options.queryTimeoutMs + 1000 : undefined;
    const { pool, newClient, connectTimeoutMs } = createPool(url, options);
    this.pool = pool;
    this.newClient = newClient;
    this.answers = new DatabaseAnswers(connectTimeoutMs);
  }

  query<Row>(sql: string, params: readonly unknown[] = [], options: QueryOptions = {}): Promise<Row[]> {
    return this.queryUnbudgeted<Row>(this.configOf(sql, params, options));
  }

  withBudget(budget: DatabaseBudget): Queryable {
    const query = <Row>(sql: string, params: readonly unknown[] = [], options: QueryOptions = {}) =>
      this.queryWithin(budget.remaining(), this.configOf(sql, params, options), budget.ms) as Promise<Row[]>;
    return {
      query,
      exec: async (sql: string) => {
        await query(sql);
      },
    };
  }

  private configOf(sql: string, params: readonly unknown[], options: QueryOptions): TimedQueryConfig {
    const name = options.prepare && this.namedStatements ? this.statements.nameOf(sql) : undefined;
    return name ? { text: sql, values: params as unknown[], name } : { text: sql, values: params as unknown[] };
  }

  /** `config` with pg's read timeout, unless a deadline of `boundMs` or less already ends it sooner. */
  private timed(config: TimedQueryConfig, boundMs = Number.POSITIVE_INFINITY): TimedQueryConfig {
    if (this.readTimeoutMs !== undefined && boundMs > this.readTimeoutMs) config.query_timeout = this.readTimeoutMs;
    return config;
  }

  private queryUnbudgeted<Row>(config: TimedQueryConfig): Promise<Row[]> {
    return this.answers.queryPooled<Row>(this.pool, this.timed(config));
  }

  /**
   * A query of a request with `budgetMs` of database time left: waiting for
   * a connection and running the query must both fit, or the request gets
   * 503. A connection whose query outlived the budget may be stuck on a
   * frozen server, so it is closed and dropped from the pool, never reused.
   * A query whose connection failed to open or was lost under it (a
   * failover, HAProxy cutting the sessions of a standby being promoted, a
   * terminated backend) runs once more on a new connection within what is
   * left of the budget: a request's queries outside a transaction are reads,
   * safe to repeat. New, not another idle one of the pool: the event that cut
   * this connection (a server lost, HAProxy cutting every session to it) has
   * usually cut the pool's other connections to that server in the same
   * instant, before the pool has noticed. If that new connection fails to
   * open (nothing ran on it), one more is tried: in the instant a server
   * dies HAProxy still routes to it, and a connection it accepted then is
   * closed without a word, which HAProxy cannot redispatch; it routes the
   * next one to another server. So a read runs at most twice, on at most
   * three connections.
   */
  private queryWithin(budgetMs: number, config: TimedQueryConfig, wholeBudgetMs: number, attempt: 0 | 1 | 2 = 0): Promise<unknown[]> {
    // The answer names the request's whole budget, not what was left of it (which may be below zero).
    const exceeded = () => new StoreUnavailableError(new DatabaseBudgetExceededError(wholeBudgetMs));
    if (budgetMs <= 0) return Promise.reject(exceeded());
    const deadlineAt = performance.now() + budgetMs;
    // Callbacks and one deadline for both waits (connection, then query), watched by the store's
    // shared timer: this runs for every query of every request, and each promise or timer less
    // is CPU saved per request.
    return new Promise((resolve, reject) => {
      let client: pg.Client | undefined;
      let timedOut = false;
      const ignoreLateErrors = () => {};
      const deadline = this.deadlines.watch(deadlineAt, () => {
        timedOut = true;
        if (!client) return reject(exceeded());
        // With a query in flight, end() destroys the socket at once (no goodbye to a frozen server) and fails the query.
        void client.end().catch(() => {});
      });
      const connect: Connect = attempt === 0 ? (callback) => this.pool.connect(callback) : (callback) => connectOutsidePool(this.newClient, callback);
      const waitFrom = performance.now();
      connect((connectError, connected, release) => {
        if (timedOut) {
          // The budget ran out while waiting: a connection that comes later goes back to the pool.
          if (!connectError) release();
          return;
        }
        if (connectError || !connected) {
          this.deadlines.cancel(deadline);
          // A proxy (HAProxy) that accepted the connection for a server just lost closes it: the next
          // connection goes to a live server.
          if (attempt < 2) return resolve(this.retryWithin(deadlineAt, config, wholeBudgetMs, attempt === 0 ? 1 : 2));
          return reject(this.answers.connectFailure(connectError, waitFrom));
        }
        client = connected;
        // A checked-out client emits its connection's errors (our end() included): unheard, they would crash the process.
        connected.on('error', ignoreLateErrors);
        const query = pgQuery(this.timed(config, budgetMs), (queryError, result) => {
          this.deadlines.cancel(deadline);
          connected.off('error', ignoreLateErrors);
          release(queryError ?? undefined);
          this.answers.note(queryError);
          if (!queryError) return resolve(result.rows);
          if (timedOut) return reject(exceeded());
          if (attempt === 0 && isConnectionLost(queryError)) return resolve(this.retryWithin(deadlineAt, config, wholeBudgetMs, 1));
          reject(classifyError(queryError));
        });
        connected.query(query);
      });
    });
  }

  /** A retry of a read whose connection failed, on a new connection, within what is left until `deadlineAt`. */
  private retryWithin(deadlineAt: number, config: TimedQueryConfig, wholeBudgetMs: number, attempt: 1 | 2): Promise<unknown[]> {
    this.connectionRetries += 1;
    return this.queryWithin(deadlineAt - performance.now(), config, wholeBudgetMs, attempt);
  }

  /**
   * With `options.budget` (an HTTP write's), waiting for a connection and
   * the whole transaction must fit in what is left of it, as
   * a read's queries must: past it the connection is closed (it may be stuck
   * on a frozen server), the transaction never commits, and the request gets
   * 503. The database going away fails the transaction the same way, never
   * the process. Either way it rejects with a TransactionInterruptedError
   * that says whether COMMIT had been sent (then it may have committed: the
   * caller's Idempotency-Key tells on retry).
   */
  async transaction<T>(fn: (tx: Transaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const budgetMs = options.budget?.remaining();
    const exceeded = () => new StoreUnavailableError(new DatabaseBudgetExceededError(options.budget?.ms ?? 0));
    if (budgetMs !== undefined && budgetMs <= 0) throw interrupted(exceeded(), 'before-begin');
    let timedOut = false;
    let client: pg.PoolClient | undefined;
    let stopWaiting: (() => void) | undefined;
    const watch = new ConnectionWatch();
    const timer =
      budgetMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            // Still waiting for a connection: give up now. With a query in flight, end()
            // destroys the socket at once and fails the query.
            if (client) void client.end().catch(() => {});
            else stopWaiting?.();
          }, budgetMs);
    try {
      client = await new Promise<pg.PoolClient>((resolve, reject) => {
        stopWaiting = () => reject(interrupted(exceeded(), 'before-begin'));
        const waitFrom = performance.now();
        // A callback, not the promise: it runs in the same tick as the connection's ReadyForQuery, and the
        // watch must be on before any later message of the same network read (a FATAL) is emitted.
        this.pool.connect((error, connected) => {
          if (error || !connected) return reject(interrupted(this.answers.connectFailure(error, waitFrom), 'before-begin'));
          // The budget ran out while waiting: a connection that comes later goes back to the pool.
          if (timedOut) return connected.release();
          watch.attach(connected);
          resolve(connected);
        });
      });
      return await this.transactionOn(client, fn, options, watch, () => (timedOut ? exceeded() : undefined));
    } finally {
      clearTimeout(timer);
    }
  }

  private async transactionOn<T>(
    client: pg.PoolClient,
    fn: (tx: Transaction) => Promise<T>,
    options: TransactionOptions,
    watch: ConnectionWatch,
    budgetSpent: () => StoreUnavailableError | undefined,
  ): Promise<T> {
    let stage: TransactionStage = 'before-begin';
    const failure = (error: unknown) => interrupted(budgetSpent() ?? classifyError(error), stageAt(error, stage));
    const run = async (sql: string, params: readonly unknown[] = [], queryOptions: QueryOptions = {}) => {
      if (watch.lost) throw failure(watch.lost);
      const name = queryOptions.prepare && this.namedStatements ? this.statements.nameOf(sql) : undefined;
      try {
        const result = await runPgQuery(client, this.timed({ text: sql, values: params as unknown[], ...(name ? { name } : {}) }));
        this.answers.note(undefined);
        return result;
      } catch (error) {
        this.answers.note(error as Error);
        throw failure(error);
      }
    };
    let atCommit: string | undefined;
    let committed = false;
    let broken = false;
    try {
      // Without parameters this is one simple-protocol message: both statements in one round trip. Sent
      // with the transaction's first statement when that one asks for it (QueryOptions.sendWithBegin).
      let pendingBegin: string | undefined = options.synchronousCommit ? `BEGIN; SET LOCAL synchronous_commit = ${options.synchronousCommit}` : 'BEGIN';
      const open = async (first?: string): Promise<pg.QueryResult | undefined> => {
        const begin = pendingBegin;
        if (begin === undefined) return undefined;
        pendingBegin = undefined;
        const beginning = run(first ? `${begin}; ${first}` : begin);
        stage = 'in-transaction';
        const results = (await beginning) as pg.QueryResult | pg.QueryResult[];
        return Array.isArray(results) ? results[results.length - 1] : results;
      };
      const tx: Transaction = {
        query: async <Row>(sql: string, params: readonly unknown[] = [], queryOptions: QueryOptions = {}) => {
          if (pendingBegin !== undefined) {
            const folded = queryOptions.sendWithBegin ? foldedWithBegin(client, this.nameOf(sql), { sql, params }, queryOptions.prepare === true) : undefined;
            const first = await open(folded);
            if (first && folded) return first.rows as Row[];
          }
          return (await run(sql, params, queryOptions)).rows as Row[];
        },
        exec: async (sql: string) => {
          await open();
          await run(sql);
        },
        copyFrom: async (target: string, chunks: AsyncIterable<string | Uint8Array>) => {
          await open();
          if (watch.lost) throw failure(watch.lost);
          const copy = client.query(Object.assign(copyFromStdin(`COPY ${target} FROM STDIN`), { query_timeout: this.readTimeoutMs }));
          try {
            await pipeline(Readable.from(chunks), copy);
          } catch (error) {
            throw failure(error);
          }
          return copy.rowCount;
        },
        queryAtCommit: (sql: string, params: readonly (string | number | null)[]) => {
          if (atCommit !== undefined) throw new Error('queryAtCommit: one statement per transaction');
          atCommit = withLiterals(sql, params);
        },
        commitWith: (statements: readonly Statement[]) =>
          commitStatements(
            {
              oneMessage: atCommit === undefined,
              // A statement without parameters (the SET LOCAL naming a write's cause) goes as its own text, never prepared:
              // its text changes with every write, and a name for each would crowd out the statements that repeat.
              inline: (statement) => (statement.params.length === 0 ? statement.sql : executeText(client, this.nameOf(statement.sql), statement)),
              takeBegin: () => {
                const begin = pendingBegin;
                pendingBegin = undefined;
                return begin;
              },
              send: async (text, commits) => {
                const sending = run(text);
                stage = commits ? 'commit-sent' : 'in-transaction';
                const results = (await sending) as unknown as pg.QueryResult | pg.QueryResult[];
                committed ||= commits;
                return Array.isArray(results) ? results : [results];
              },
              runAlone: async (text) => {
                await open();
                await run(text);
              },
              run: (statement) => tx.query(statement.sql, statement.params, { prepare: statement.params.length > 0, sendWithBegin: true }),
              onCitus: () => this.citus.isCitus(run),
            },
            statements,
          ),
      };
      const result = await fn(tx);
      if (committed) return result;
      await open();
      if (watch.lost) throw failure(watch.lost);
      const committing = run(atCommit === undefined ? 'COMMIT' : `${atCommit}; COMMIT`);
      stage = 'commit-sent';
      await committing;
      return result;
    } catch (error) {
      const failed = error instanceof StoreUnavailableError ? interrupted(error, stage) : error;
      broken = failed instanceof StoreUnavailableError || watch.lost !== undefined;
      if (!broken) await runPgQuery(client, this.timed({ text: 'ROLLBACK' })).catch(() => {});
      throw failed;
    } finally {
      // A connection that failed mid-transaction is discarded (closed), never reused.
      client.release(watch.lost ?? broken);
      watch.detach(client);
    }
  }

  private nameOf(sql: string): string | undefined {
    return this.namedStatements ? this.statements.nameOf(sql) : undefined;
  }

  async exec(sql: string): Promise<void> {
    await this.query(sql);
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

