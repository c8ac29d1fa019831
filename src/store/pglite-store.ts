import { PGlite } from '@electric-sql/pglite';
import type { DirectoryLock } from './directory-lock.js';
import type { Statement, Store, Transaction, TransactionOptions } from './store.js';

// PGlite's COPY reads a whole Blob at once: rows are sent in blobs of about
// this size, so memory stays bounded however long the input is.
const COPY_BLOB_CHARS = 4 * 1024 * 1024;

export class PgliteStore implements Store {
  readonly kind = 'pglite' as const;
  readonly description: string;

  private constructor(
    private readonly db: PGlite,
    private readonly lock: DirectoryLock | undefined,
    dataDir: string | undefined,
  ) {
    this.description = dataDir ? `pglite://${dataDir}` : 'pglite://memory';
  }

  /**
   * Opens PGlite in `dataDir` (which the caller has locked), or in memory;
   * `loadDataDir` starts it from a `dump()` instead of a fresh cluster;
   * `settings` are server settings (`-c name=value`), e.g. a smaller
   * `shared_buffers` for short-lived stores, which start faster.
   */
  static async open(dataDir: string | undefined, lock?: DirectoryLock, loadDataDir?: Blob, settings: Record<string, string> = {}): Promise<PgliteStore> {
    const startParams = Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
    // One options object: `new PGlite(undefined, options)` drops the options,
    // so a template passed that way was ignored and every store ran initdb.
    const db = new PGlite({
      ...(dataDir ? { dataDir } : {}),
      ...(loadDataDir ? { loadDataDir } : {}),
      ...(startParams.length > 0 ? { startParams: [...PGlite.defaultStartParams, ...startParams] } : {}),
    });
    await db.waitReady;
    return new PgliteStore(db, lock, dataDir);
  }

  async query<Row>(sql: string, params: readonly unknown[] = []): Promise<Row[]> {
    const result = await this.db.query<Row>(sql, params as unknown[]);
    return result.rows;
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.db.transaction(async (transaction) => {
      if (options.synchronousCommit) await transaction.exec(`SET LOCAL synchronous_commit = ${options.synchronousCommit}`);
      let atCommit: { sql: string; params: readonly (string | number | null)[] } | undefined;
      const result = await fn({
        query: async <Row>(sql: string, params: readonly unknown[] = []) =>
          (await transaction.query<Row>(sql, params as unknown[])).rows,
        exec: async (sql: string) => {
          await transaction.exec(sql);
        },
        copyFrom: async (target: string, chunks: AsyncIterable<string | Uint8Array>) => {
          let rows = 0;
          let pending: (string | Uint8Array)[] = [];
          let size = 0;
          const flush = async () => {
            if (size === 0) return;
            const result = await transaction.query(`COPY ${target} FROM '/dev/blob'`, [], { blob: new Blob(pending) });
            rows += result.affectedRows ?? 0;
            pending = [];
            size = 0;
          };
          for await (const chunk of chunks) {
            pending.push(chunk);
            size += chunk.length;
            if (size >= COPY_BLOB_CHARS) await flush();
          }
          await flush();
          return rows;
        },
        queryAtCommit: (sql: string, params: readonly (string | number | null)[]) => {
          if (atCommit !== undefined) throw new Error('queryAtCommit: one statement per transaction');
          atCommit = { sql, params };
        },
        // In process: no round trip to save, the statements simply run in turn.
        commitWith: async (statements: readonly Statement[]) => {
          const rows: unknown[][] = [];
          for (const statement of statements) rows.push((await transaction.query(statement.sql, [...statement.params])).rows);
          return rows;
        },
      });
      // In process: no round trip to save, the statement simply runs last.
      if (atCommit) await transaction.query(atCommit.sql, [...atCommit.params]);
      return result;
    });
  }

  async exec(sql: string): Promise<void> {
    await this.db.exec(sql);
  }

  /** The whole data directory as an uncompressed tarball, for `open(…, loadDataDir)`. */
  async dump(): Promise<Blob> {
    return this.db.dumpDataDir('none');
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async close(): Promise<void> {
    await this.db.close();
    await this.lock?.release();
  }
}
