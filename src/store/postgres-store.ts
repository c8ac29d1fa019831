import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFromStdin } from 'pg-copy-streams';
import { StoreUnavailableError, type QueryOptions, type Store, type Transaction } from './store.js';
import { StatementNames } from './statement-names.js';

export interface PostgresStoreOptions {
  poolSize?: number;
  /** How long to wait for a free connection or a new one before failing. */
  connectionTimeoutMs?: number;
  /** How long one query may run: cancelled on the server, abandoned by the client. */
  queryTimeoutMs?: number;
  /** How long a query may wait for a free pooled connection when all are busy (load, not an outage). */
  poolWaitMs?: number;
  /** Extra `-c` settings, e.g. a search_path for an isolated test schema. */
  searchPath?: string;
  /**
   * Prepare the list engine's hot statements under a name per connection
   * (default). false sends them unnamed: needed behind PgBouncer in
   * transaction mode, which (1.18) does not carry named statements across
   * the server connections it hands out (docs/scaling.md).
   */
  namedStatements?: boolean;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly description: string;
  readonly pool: pg.Pool;
  private readonly statements = new StatementNames();
  private readonly namedStatements: boolean;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    this.description = redactUrl(url);
    this.namedStatements = options.namedStatements ?? true;
    const connectTimeoutMs = options.connectionTimeoutMs ?? 2000;
    // node-postgres uses one timeout for opening a connection and for waiting
    // for a busy pool. Opening must fail fast (the database is away: 503 at
    // once), while waiting is just load, so each connection gets its own
    // shorter timeout and the pool's is the wait.
    class FastConnectClient extends pg.Client {
      constructor(config?: pg.ClientConfig) {
        super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
      }
    }
    this.pool = new pg.Pool({
      connectionString: url,
      Client: FastConnectClient,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: Math.max(options.poolWaitMs ?? 5000, connectTimeoutMs),
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      ...(options.queryTimeoutMs
        ? { statement_timeout: options.queryTimeoutMs, query_timeout: options.queryTimeoutMs + 1000 }
        : {}),
      ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
    });
    // An idle client losing its connection (database restart) must not crash
    // the process; the next query gets a fresh connection.
    this.pool.on('error', () => {});
  }

  async query<Row>(sql: string, params: readonly unknown[] = [], options: QueryOptions = {}): Promise<Row[]> {
    try {
      const name = options.prepare && this.namedStatements ? this.statements.nameOf(sql) : undefined;
      const result = await this.pool.query({ text: sql, values: params as unknown[], ...(name ? { name } : {}) });
      return result.rows as Row[];
    } catch (error) {
      throw classifyError(error);
    }
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw classifyError(error);
    });
    let broken = false;
    const run = async (sql: string, params: readonly unknown[] = []) => {
      try {
        return await client.query(sql, params as unknown[]);
      } catch (error) {
        throw classifyError(error);
      }
    };
    try {
      await run('BEGIN');
      const tx: Transaction = {
        query: async <Row>(sql: string, params: readonly unknown[] = []) => (await run(sql, params)).rows as Row[],
        exec: async (sql: string) => {
          await run(sql);
        },
        copyFrom: async (target: string, chunks: AsyncIterable<string | Uint8Array>) => {
          const copy = client.query(copyFromStdin(`COPY ${target} FROM STDIN`));
          try {
            await pipeline(Readable.from(chunks), copy);
          } catch (error) {
            throw classifyError(error);
          }
          return copy.rowCount;
        },
      };
      const result = await fn(tx);
      await run('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      broken = error instanceof StoreUnavailableError;
      throw error;
    } finally {
      // A connection that failed mid-transaction is discarded, not reused.
      client.release(broken);
    }
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

export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

// SQLSTATE class 08 (connection exception), 57P01–57P03 (the server is
// shutting down or starting up) and 57014 (cancelled by statement_timeout:
// the database did not answer in time, so the client should retry later).
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|57014)$/;

/**
 * The server answering with an error is a query problem; anything else the
 * driver throws (refused, reset, connect timeout, connection terminated) means
 * the database is away. Decided by error class and SQLSTATE, not message text.
 */
function classifyError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (error instanceof pg.DatabaseError) {
    return error.code !== undefined && UNAVAILABLE_SQLSTATE.test(error.code) ? new StoreUnavailableError(error) : error;
  }
  if (error instanceof TypeError || error instanceof RangeError || !(error instanceof Error)) return error;
  return new StoreUnavailableError(error);
}
