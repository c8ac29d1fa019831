import pg from 'pg';
import { ConnectGate } from './connect-gate.js';

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

/**
 * The store's pool, and a client of the pool's kind to connect outside it (a read's retry on a new
 * connection).
 */
export function createPool(url: string, options: PostgresStoreOptions): { pool: pg.Pool; newClient: () => pg.Client; connectTimeoutMs: number } {
  const connectTimeoutMs = options.connectionTimeoutMs ?? 2000;
  // node-postgres uses one timeout for opening a connection and for waiting
  // for a busy pool. Opening must fail fast (the database is away: 503 at
  // once), while waiting is just load, so each connection gets its own
  // shorter timeout and the pool's is the wait.
  const gate = new ConnectGate();
  class FastConnectClient extends pg.Client {
    constructor(config?: pg.ClientConfig) {
      super({ ...config, connectionTimeoutMillis: connectTimeoutMs });
    }

    // The pool connects with a callback; while the database does not answer, one attempt at a time (ConnectGate).
    override connect(): Promise<pg.Client>;
    override connect(callback: (error: Error) => void): void;
    override connect(callback?: (error: Error) => void): Promise<pg.Client> | void {
      if (!callback) return super.connect();
      gate.admit(
        (finished) => super.connect((error: Error | null) => finished(error ?? undefined)),
        (error) => callback(error as Error),
      );
    }
  }
  const pool = new pg.Pool({
    connectionString: url,
    Client: FastConnectClient,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: Math.max(options.poolWaitMs ?? 5000, connectTimeoutMs),
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    ...(options.queryTimeoutMs ? { statement_timeout: options.queryTimeoutMs } : {}),
    ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
  });
  // An idle client losing its connection (database restart) must not crash
  // the process; the next query gets a fresh connection.
  pool.on('error', () => {});
  const poolOptions = pool.options;
  return { pool, newClient: () => new FastConnectClient(poolOptions), connectTimeoutMs };
}

/** How a query gets its client: from the pool, or one of its own (connectOutsidePool); `release` gives it back or closes it. */
export type Connect = (callback: (error: Error | undefined, client: pg.Client | undefined, release: (error?: Error) => void) => void) => void;

/** Connects a client of its own (through the connect gate, like the pool's); `release` closes it. */
export function connectOutsidePool(newClient: () => pg.Client, callback: Parameters<Connect>[0]): void {
  const client = newClient();
  // Its connection's errors after the query (the server going away) must not crash the process.
  client.on('error', () => {});
  const close = () => void client.end().catch(() => {});
  client.connect((error: Error | null) => {
    if (error) {
      close();
      return callback(error, undefined, () => {});
    }
    callback(undefined, client, close);
  });
}
